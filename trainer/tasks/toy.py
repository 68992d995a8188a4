"""A toy verifiable task for the GRPO recipe and the learning test: answer an addition with its sum.

Each question is "What is a + b? Answer with the number only."; its answer is the exact sum. The reward checks
that answer, never the answer's look:

* 1.0 -- the reply (whitespace stripped) IS the sum, e.g. ``"7"``;
* ``NUMBER_FIRST`` (0.5) -- the first number in the reply is the sum but other text surrounds it, e.g. ``"7 ab"``
  (the partial credit GSM8K-style graders give by reading the first number);
* 0.0 -- anything else, a different or missing number included.

With ``total`` set every question sums to that same number (``"What is 3 + 4?"``, ``"What is 6 + 1?"``...): the
"emit a target number" task a randomly initialised tiny model can learn within a CI-sized budget. Without it the
sums vary and the policy must actually add. ``min_operand`` bounds both operands from below: with ``total`` and
``min_operand: 1`` no question states its own sum ("What is 0 + 7?"), so the sum's number appears in a Verifier's
prompt only where the judged solution writes it.
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
    n_prompts: int = 32,
    seed: int = 0,
    max_operand: int = 50,
    total: int | None = None,
    min_operand: int = 0,
) -> ToyTask:
    """``n_prompts`` questions "What is a + b?" with reproducible operands in ``[min_operand, max_operand]``.

    ``total`` fixes every sum (then ``min_operand <= a <= total - min_operand`` and ``b = total - a``).
    """
    if (
        n_prompts < 1
        or not 0 <= min_operand <= max_operand
        or (total is not None and total < 2 * min_operand)
    ):
        raise ValueError(
            f"addition_task: need n_prompts >= 1, 0 <= min_operand <= max_operand and total >= 2 * min_operand "
            f"or null; got n_prompts={n_prompts}, min_operand={min_operand}, max_operand={max_operand}, "
            f"total={total}"
        )
    rng = random.Random(seed)
    items = []
    for index in range(n_prompts):
        if total is None:
            a, b = rng.randint(min_operand, max_operand), rng.randint(min_operand, max_operand)
        else:
            a = rng.randint(min_operand, total - min_operand)
            b = total - a
        items.append(
            {
                "id": f"add-{index}",
                "question": f"What is {a} + {b}? Answer with the number only.",
                "answer": str(a + b),
            }
        )
    return ToyTask(items)
