"""A toy verifiable task for the GRPO recipe and the learning test: answer in digits.

Each question asks for a sum; the reward is the share of the answer's characters that are digits (0 for an
empty answer), so a randomly initialised tiny model starts near 0 and a learning policy climbs towards 1.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from harness.systems.types import Episode


@dataclass
class ToyTask:
    """Questions (``{"id", "question", "answer"}``) and a verifiable reward."""

    items: list[dict[str, Any]]

    def reward(self, item: dict[str, Any], episode: Episode) -> float:
        """Share of the final answer's non-space characters that are digits."""
        answer = "".join((episode.final_answer or "").split())
        return sum(ch.isdigit() for ch in answer) / len(answer) if answer else 0.0


def digits_task(n_prompts: int = 32, seed: int = 0) -> ToyTask:
    """``n_prompts`` questions "What is a + b? Answer with digits only." with reproducible operands."""
    rng = random.Random(seed)
    items = []
    for index in range(n_prompts):
        a, b = rng.randint(0, 50), rng.randint(0, 50)
        items.append(
            {
                "id": f"digits-{index}",
                "question": f"What is {a} + {b}? Answer with digits only.",
                "answer": str(a + b),
            }
        )
    return ToyTask(items)
