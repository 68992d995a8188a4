"""What each role of the V-C system did in an ``inspect eval`` log (``-T system=vc``): the cross-solver table's rows.

For every sample the episode (``store["episode"]``) holds the Solver's solution, each Verifier report and each
Corrector revision. This script counts, over the log's samples:

* the Solver's first solution right (the math judge's core, as the score);
* the Verifier on that first solution: verdicts on wrong solutions that flag them (recall), verdicts on right ones
  that flag them (false alarms), reports without a parsable verdict;
* the Corrector's revisions: those with an answer the math judge reads, those that turn a wrong solution right
  (fixes) and those that turn a right one wrong (breaks).

Run as a script on one or more logs:

    PYTHONPATH=. .venv/bin/python benchmarks/vc_log_roles.py LOG.eval [LOG.eval ...]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

from inspect_ai.log import read_eval_log

from mara_bench.judges.cores import math_verdict
from mara_bench.judges.math import extract_answer


@dataclass
class RoleCounts:
    """Counts over one log's samples."""

    samples: int = 0
    solver_right: int = 0
    wrong: int = 0
    caught: int = 0
    right: int = 0
    false_alarms: int = 0
    no_verdict: int = 0
    revisions: int = 0
    answered: int = 0
    fixes: int = 0
    breaks: int = 0

    def line(self) -> str:
        return (
            f"samples {self.samples}; Solver right {ratio(self.solver_right, self.samples)}; Verifier on it: "
            f"recall {ratio(self.caught, self.wrong)}, false alarms {ratio(self.false_alarms, self.right)}, "
            f"no verdict {ratio(self.no_verdict, self.samples)}; Corrector: revisions {self.revisions}, "
            f"answered {ratio(self.answered, self.revisions)}, fixes {self.fixes}, breaks {self.breaks}"
        )


def ratio(part: int, whole: int) -> str:
    """``part/whole`` and its share, where there is a whole."""
    return f"{part}/{whole}" + (f" ({part / whole:.2f})" if whole else "")


def count(path: str) -> RoleCounts:
    """The counts of one log."""
    counts = RoleCounts()
    for sample in read_eval_log(path).samples or []:
        episode = json.loads(sample.store["episode"])
        gold = str(sample.target[0] if isinstance(sample.target, list) else sample.target)
        calls = episode["calls"]
        right = {call["id"]: math_verdict(call["reply"]["text"], gold)[1] for call in calls}
        first = next(call for call in calls if call["role"] == "solver")
        counts.samples += 1
        counts.solver_right += right[first["id"]]
        report = next((c for c in calls if c["role"] == "verifier" and c["parent"] == first["id"]), None)
        if report is not None:
            verdict = report["meta"].get("verdict")
            counts.no_verdict += verdict is None
            if right[first["id"]]:
                counts.right += 1
                counts.false_alarms += verdict is False
            else:
                counts.wrong += 1
                counts.caught += verdict is False
        by_id = {call["id"]: call for call in calls}
        for call in calls:
            if call["role"] != "corrector":
                continue
            judged = by_id[by_id[call["parent"]]["meta"]["candidate"]]
            counts.revisions += 1
            counts.answered += extract_answer(call["reply"]["text"]) is not None
            counts.fixes += right[call["id"]] and not right[judged["id"]]
            counts.breaks += right[judged["id"]] and not right[call["id"]]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    for path in parser.parse_args().logs:
        print(f"{path}: {count(path).line()}")


if __name__ == "__main__":
    main()
