"""Which capital M-ASK's summary agent writes as evidence, read from a run's rollouts (``<run>/rollouts/step_*.jsonl``).

On the look-up task with ``neighbour_capital_first`` passages the first capital a search returns belongs to another
country (``mara_bench.trainer.tasks.lookup``). For each summary reply of the RL steps this script says whether its
``<evidence>`` is the asked country's capital as the retrieved passages state it (read), the first capital they
state for another country (the careless pick, ``mara_bench.trainer.demos.text.distractors``), another capital, or
none. Run as a script:

    PYTHONPATH=. .venv/bin/python benchmarks/evidence_picks.py runs/learn-mask-s0/seed-0
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from benchmarks._rollouts import step_files
from mara_bench.trainer.demos.text import country, distractors, stated_capital

EVIDENCE = re.compile(r"<evidence>(.*?)</evidence>", re.DOTALL)
KINDS = ("read", "careless", "other", "none")


def pick_kind(passages: str, asked: str, reply: str) -> str:
    """What the summary's evidence is, given the text it read and the country asked about (one of ``KINDS``)."""
    found = EVIDENCE.search(reply)
    if found is None or not found.group(1).strip():
        return "none"
    evidence = found.group(1).strip()
    if evidence == stated_capital(passages, asked):
        return "read"
    return "careless" if evidence in distractors(passages, asked)[:1] else "other"


def tally_step(path: Path) -> Counter:
    kinds: Counter = Counter()
    for line in path.read_text().splitlines():
        record = json.loads(line)
        asked = country(record["item"]["question"])
        for episode in record["episodes"]:
            for call in episode["calls"]:
                if call["role"] == "summary":
                    kinds[pick_kind(call["messages"][-1]["content"], asked, call["reply"]["text"])] += 1
    return kinds


def main() -> None:
    for path in step_files(__doc__.split("\n\n")[0]):
        kinds = tally_step(path)
        total = max(sum(kinds.values()), 1)
        shares = ", ".join(f"{kind} {kinds[kind] / total:.2f}" for kind in KINDS)
        print(f"{path.stem}: summaries {sum(kinds.values())}; evidence {shares}")


if __name__ == "__main__":
    main()
