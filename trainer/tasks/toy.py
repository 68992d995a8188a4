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

The MarsRL learning toy (``totals``, ``heldout_totals``): each training question's sum is drawn from ``totals``,
each of the ``heldout_prompts`` held-out questions' (``heldout``) from ``heldout_totals``, a disjoint set -- no
held-out question, right answer or sum is ever trained on, and no one number is right often enough to be judged
right by itself. ``solver_skill`` scripts the V-C Solver (``mara_bench.trainer.demos.vc``: right with that probability, else
off by 1 to 3) in every rollout (``scripted_skills``), so each step's Verifier judges right and wrong solutions in a
fixed proportion, whatever the policy itself would solve.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from mara_bench.core.episodes import Episode

NUMBER_FIRST = 0.5
"""Reward of a reply whose first number is the sum but which is not the bare number."""

_NUMBER = re.compile(r"\d+")


@dataclass
class ToyTask:
    """Questions (``{"id", "question", "answer"}``) and a verifiable reward."""

    items: list[dict[str, Any]]
    heldout: list[dict[str, Any]] = field(default_factory=list)
    """The held-out split: questions whose sums no training question has."""
    scripted_skills: dict[str, float] = field(default_factory=dict)
    """Roles the demonstration policy plays in every rollout (``mara_bench.trainer.rollouts.scripted_roles``), with its
    skill."""

    def reward(self, item: dict[str, Any], episode: Episode) -> float:
        return reply_reward(episode.final_answer or "", item["answer"])

    def benchmark_rows(self, heldout: bool = False) -> list[dict[str, Any]]:
        """The training (or held-out) questions as rows of the AIME format, for ``-T data=`` of
        ``tasks/aime.py`` (a trained Verifier scored on held-out sums through ``inspect eval``)."""
        return [
            {"id": item["id"], "problem": item["question"], "answer": item["answer"]}
            for item in (self.heldout if heldout else self.items)
        ]


def reply_reward(reply: str, answer: str) -> float:
    """1 for exactly ``answer``, ``NUMBER_FIRST`` when it is the reply's first number, else 0."""
    reply = reply.strip()
    if reply == answer:
        return 1.0
    first = _NUMBER.search(reply)
    return NUMBER_FIRST if first is not None and first.group() == answer else 0.0


def question(index: int, a: int, b: int, split: str = "") -> dict[str, Any]:
    """Item ``add-<split>-<index>`` (``add-<index>`` without a split): "What is a + b?" and its sum."""
    return {
        "id": f"add-{split}-{index}" if split else f"add-{index}",
        "question": f"What is {a} + {b}? Answer with the number only.",
        "answer": str(a + b),
    }


def with_sums(
    count: int, sums: list[int], min_operand: int, rng: random.Random, split: str
) -> list[dict[str, Any]]:
    """``count`` questions, each summing to one of ``sums`` (drawn), operands at least ``min_operand``."""
    drawn = []
    for index in range(count):
        total = rng.choice(sums)
        a = rng.randint(min_operand, total - min_operand)
        drawn.append(question(index, a, total - a, split))
    return drawn


def addition_task(
    n_prompts: int = 32,
    seed: int = 0,
    max_operand: int = 50,
    total: int | None = None,
    min_operand: int = 0,
    totals: list[int] | None = None,
    heldout_totals: list[int] | None = None,
    heldout_prompts: int = 0,
    solver_skill: float | None = None,
) -> ToyTask:
    """``n_prompts`` questions "What is a + b?" with reproducible operands in ``[min_operand, max_operand]``.

    ``total`` fixes every sum (then ``min_operand <= a <= total - min_operand`` and ``b = total - a``); ``totals``
    draws each sum from a list instead; ``heldout_prompts`` held-out questions sum to ``heldout_totals`` (disjoint
    from ``totals``); ``solver_skill`` scripts the V-C Solver (see the module docstring).
    """
    sums = [total] if total is not None else list(totals or [])
    held = list(heldout_totals or [])
    if (
        n_prompts < 1
        or not 0 <= min_operand <= max_operand
        or any(value < 2 * min_operand for value in sums + held)
        or (total is not None and totals is not None)
    ):
        raise ValueError(
            f"addition_task: need n_prompts >= 1, 0 <= min_operand <= max_operand, every total >= 2 * min_operand "
            f"and at most one of total / totals; got n_prompts={n_prompts}, min_operand={min_operand}, "
            f"max_operand={max_operand}, total={total}, totals={totals}, heldout_totals={heldout_totals}"
        )
    if heldout_prompts and (not sums or not held or set(sums) & set(held)):
        raise ValueError(
            f"addition_task: heldout_prompts needs totals and heldout_totals with no sum in common; got "
            f"totals={sums}, heldout_totals={held}"
        )
    if solver_skill is not None and not 0.0 <= solver_skill <= 1.0:
        raise ValueError(f"addition_task: solver_skill must be in [0, 1]; got {solver_skill}")
    rng = random.Random(seed)
    if totals is not None:
        items = with_sums(n_prompts, sums, min_operand, rng, "train")
    else:
        items = []
        for index in range(n_prompts):
            if total is None:
                a, b = rng.randint(min_operand, max_operand), rng.randint(min_operand, max_operand)
            else:
                a = rng.randint(min_operand, total - min_operand)
                b = total - a
            items.append(question(index, a, b))
    heldout = with_sums(heldout_prompts, held, min_operand, rng, "heldout") if heldout_prompts else []
    scripted = {} if solver_skill is None else {"solver": solver_skill}
    return ToyTask(items, heldout, scripted)
