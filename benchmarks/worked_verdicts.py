"""What the worked Verifier's reports do, read from a MarsRL run's rollouts (``<run>/rollouts/step_*.jsonl``).

The worked demonstrations (``warmup.demo_work``, ``mara_bench.trainer.demos.vc.last_digit_check``) teach a report of
the form "3 + 8 = 11, so the sum ends in 1; 41 ends in 1: the same." and a verdict. For each Verifier reply of the
RL steps this script checks, against the question and the judged answer: the operands' last digits copied right,
their sum right, "the same"/"different" true of the two digits it wrote, the verdict the one its own comparison
implies, and the verdict true. Run as a script:

    PYTHONPATH=. .venv/bin/python benchmarks/worked_verdicts.py runs/learn-marsrl-s0/seed-0
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from benchmarks._rollouts import step_files
from mara_bench.harness.systems.parsing import strip_thinking
from mara_bench.harness.systems.vc import parse_verdict
from mara_bench.judges.math import extract_answer

REPORT = re.compile(
    r"\s*(\d+) \+ (\d+) = (\d+), so the sum ends in (\d); (\d+) ends in (\d): (the same|different)"
)
OPERANDS = re.compile(r"(\d+)\s*\+\s*(\d+)")


@dataclass
class Tally:
    """Counts over the Verifier replies of one step."""

    replies: int = 0
    worked: int = 0
    copied: int = 0
    added: int = 0
    compared: int = 0
    consistent: int = 0
    true: int = 0

    def shares(self) -> str:
        worked = max(self.worked, 1)
        return (
            f"replies {self.replies}, worked form {self.worked / max(self.replies, 1):.2f}; of those: digits copied "
            f"{self.copied / worked:.2f}, added right {self.added / worked:.2f}, compared right "
            f"{self.compared / worked:.2f}, verdict follows the comparison {self.consistent / worked:.2f}; "
            f"verdict true (all replies) {self.true / max(self.replies, 1):.2f}"
        )


def tally_step(path: Path) -> Tally:
    tally = Tally()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        a, b = (int(n) for n in OPERANDS.search(record["item"]["question"]).groups())
        answer = record["item"]["answer"]
        for episode in record["episodes"]:
            calls = episode["calls"]
            for call in calls:
                if call["role"] != "verifier":
                    continue
                tally.replies += 1
                text = call["reply"]["text"]
                verdict = parse_verdict(text)
                judged = extract_answer(strip_thinking(calls[call["parent"]]["reply"]["text"]))
                tally.true += verdict is not None and verdict is (judged == answer)
                report = REPORT.match(text)
                if report is None:
                    continue
                tally.worked += 1
                x, y, digits, ends, _, judged_ends, comparison = report.groups()
                same = comparison == "the same"
                tally.copied += (int(x), int(y)) == (a % 10, b % 10)
                tally.added += int(digits) == int(x) + int(y)
                tally.compared += same is (ends == judged_ends)
                tally.consistent += verdict is not None and verdict is same
    return tally


def main() -> None:
    for path in step_files(__doc__.split("\n\n")[0]):
        print(f"{path.stem}: {tally_step(path).shares()}")


if __name__ == "__main__":
    main()
