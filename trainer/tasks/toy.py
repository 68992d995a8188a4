"""A toy verifiable task for the GRPO recipe and the learning test: answer an addition with its sum.

Each question is "What is a + b? Answer with the number only."; its answer is the exact sum. The reward checks
that answer, never the answer's look:

* 1.0 -- the reply (whitespace stripped) IS the sum, e.g. ``"7"``;
* ``NUMBER_FIRST`` (0.5) -- the first number in the reply is the sum but other text surrounds it, e.g. ``"7 ab"``
  (the partial credit GSM8K-style graders give by reading the first number);
* 0.0 -- anything else, a different or missing number included.

With ``total`` set every question sums to that same number (``"What is 3 + 4?"``, ``"What is 6 + 1?"``...): the
"emit a target number" task a randomly initialised tiny model can learn within a CI-sized budget. Without it the
sums vary and the policy must actually add.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from harness.systems.types import Episode

NUMBER_FIRST = 0.5
"""Reward of a reply whose first number is the sum but which is not the bare number."""

_NUMBER = re.compile(r"\d+")


@dataclass
class ToyTask:
    """Questions (``{"id", "question", "answer"}``) and a verifiable reward."""

    items: list[dict[str, Any]]

    def reward(self, item: dict[str, Any], episode: Episode) -> float:
        return reply_reward(episode.final_answer or "", item["answer"])

    def benchmark_rows(self) -> list[dict[str, Any]]:
        """The questions as rows of the AIME format, for ``-T data=`` of ``tasks/aime.py``."""
        return [
            {"id": item["id"], "problem": item["question"], "answer": item["answer"]} for item in self.items
        ]


def reply_reward(reply: str, answer: str) -> float:
    """1 for exactly ``answer``, ``NUMBER_FIRST`` when it is the reply's first number, else 0."""
    reply = reply.strip()
    if reply == answer:
        return 1.0
    first = _NUMBER.search(reply)
    return NUMBER_FIRST if first is not None and first.group() == answer else 0.0


def addition_task(
    n_prompts: int = 32, seed: int = 0, max_operand: int = 50, total: int | None = None
) -> ToyTask:
    """``n_prompts`` questions "What is a + b?" with reproducible operands in ``[0, max_operand]``.

    ``total`` fixes every sum (then ``0 <= a <= total`` and ``b = total - a``).
    """
    if n_prompts < 1 or max_operand < 0 or (total is not None and total < 0):
        raise ValueError(
            f"addition_task: need n_prompts >= 1, max_operand >= 0 and total >= 0 or null; got {n_prompts}, "
            f"{max_operand}, {total}"
        )
    rng = random.Random(seed)
    items = []
    for index in range(n_prompts):
        if total is None:
            a, b = rng.randint(0, max_operand), rng.randint(0, max_operand)
        else:
            a = rng.randint(0, total)
            b = total - a
        items.append(
            {
                "id": f"add-{index}",
                "question": f"What is {a} + {b}? Answer with the number only.",
                "answer": str(a + b),
            }
        )
    return ToyTask(items)
