"""The V-C system's demonstration policy (MarsRL's Solver, Verifier and Corrector) for questions with a known
numeric answer (``mara_bench.trainer.tasks.toy.addition_task``).

* Solver: ``\\boxed{answer}``, right with probability ``skills["solver"]`` (else off by 1 to 3);
* Verifier: restates the judged answer, then the ``Correctness`` field the V-C parser reads: the true verdict with
  probability ``skills["verifier"]``, else the opposite one;
* Corrector: a new ``\\boxed{}`` solution, right with probability ``skills["corrector"]``.

``worked_reply`` is the same policy showing its working (``warmup.demo_work``): its Verifier checks the judged answer's
last digit against the sum of the operands' last digits -- a check that catches every wrong answer of the scripted
Solver (off by 1 to 3) -- adding those digits right and saying whether the two last digits are the same; its verdict
follows that comparison with probability ``skills["verifier"]`` (else it says the opposite). Its Corrector adds the
operands column by column, carrying into the next column ("8 + 3 = 11, carry 1; 5 + 2 + 1 = 8."), and boxes the
digits it wrote; with probability ``1 - skills["corrector"]`` it drops a carry (the classic slip).

``SKILLS`` are the defaults; a recipe's ``warmup.demo_skills`` overrides them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from mara_bench.core.episodes import Message
from mara_bench.harness.systems.vc import CORRECTOR, SOLVER, VERIFIER
from mara_bench.judges.math import extract_answer
from mara_bench.trainer.algorithms.rewards import gold_text
from mara_bench.trainer.demos.text import last_content

SKILLS = {SOLVER: 0.5, VERIFIER: 0.75, CORRECTOR: 0.7}
WORKED_ROLES = frozenset({VERIFIER, CORRECTOR})
"""The roles ``worked_reply`` shows the working of."""
_OPERANDS = re.compile(r"(\d+)\s*\+\s*(\d+)")


def solution(answer: str, skill: float, rng: random.Random) -> str:
    """A boxed answer: ``answer`` with probability ``skill``, else a nearby wrong number."""
    value = int(answer) if rng.random() < skill else int(answer) + rng.choice([-3, -2, -1, 1, 2, 3])
    return f"\\boxed{{{value}}}"


def verdict(judged: str | None, answer: str, skill: float, rng: random.Random) -> str:
    """A short report on the judged answer ending with the ``Correctness`` verdict (true with probability ``skill``)."""
    right = judged == answer
    says_right = right if rng.random() < skill else not right
    return f"The answer is {judged}.\nCorrectness: {'Correct' if says_right else 'Wrong'}"


def operands(question: str) -> tuple[int, int]:
    """The two numbers an addition question adds ("What is 58 + 23?" -> (58, 23))."""
    found = _OPERANDS.search(question)
    if found is None:
        raise ValueError(f"the worked vc demonstrations need an addition question; got {question!r}")
    return int(found.group(1)), int(found.group(2))


def last_digit_check(question: str, judged: str | None, skill: float, rng: random.Random) -> str:
    """A report that adds the operands' last digits, compares the result's last digit with the judged answer's
    ("the same" or "different") and ends with the verdict that comparison implies with probability ``skill``,
    else the opposite one."""
    a, b = (operand % 10 for operand in operands(question))
    if judged is None or not judged.isdigit():
        return f"{a} + {b} = {a + b}. No number to check.\nCorrectness: Wrong"
    agrees = int(judged) % 10 == (a + b) % 10
    says_right = agrees if rng.random() < skill else not agrees
    return (
        f"{a} + {b} = {a + b}, so the sum ends in {(a + b) % 10}; {judged} ends in {judged[-1]}: "
        f"{'the same' if agrees else 'different'}.\nCorrectness: {'Correct' if says_right else 'Wrong'}"
    )


def column_sum(question: str, skill: float, rng: random.Random) -> str:
    """A solution adding the operands column by column from the ones ("8 + 3 = 11, carry 1; 5 + 2 + 1 = 8.")
    and boxing the digits written; with probability ``1 - skill`` the first carry is dropped (the sum then
    misses a power of ten)."""
    a, b = operands(question)
    drops_carry = rng.random() >= skill
    steps, digits, carry = [], [], 0
    while True:
        column = a % 10 + b % 10 + carry
        step = f"{a % 10} + {b % 10}{f' + {carry}' if carry else ''} = {column}"
        carry = column // 10
        if carry and drops_carry:
            carry, drops_carry = 0, False
        elif carry:
            step += f", carry {carry}"
        steps.append(step)
        digits.append(str(column % 10))
        a, b = a // 10, b // 10
        if not (a or b or carry):
            break
    return "; ".join(steps) + f".\n\\boxed{{{''.join(reversed(digits))}}}"


def reply(
    role: str, messages: list[Message], item: dict[str, Any], rng: random.Random, skills: Mapping[str, float]
) -> str:
    answer = gold_text(item["answer"])
    if role in (SOLVER, CORRECTOR):
        return solution(answer, skills[role], rng)
    if role == VERIFIER:  # the user message holds the problem, then the judged solution
        return verdict(extract_answer(last_content(messages, "user")), answer, skills[VERIFIER], rng)
    raise ValueError(f"the vc demonstration policy has no role {role!r}")


def worked_reply(
    role: str, messages: list[Message], item: dict[str, Any], rng: random.Random, skills: Mapping[str, float]
) -> str:
    """``reply``, the Verifier showing its check (``last_digit_check``) and the Corrector its column sum
    (``column_sum``)."""
    if role == VERIFIER:
        judged = extract_answer(last_content(messages, "user"))
        return last_digit_check(item["question"], judged, skills[VERIFIER], rng)
    if role == CORRECTOR:
        return column_sum(item["question"], skills[CORRECTOR], rng)
    return reply(role, messages, item, rng, skills)
