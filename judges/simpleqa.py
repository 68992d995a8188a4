"""SimpleQA grader (MATPO's judge): the official simple-evals prompt grades a response CORRECT / INCORRECT /
NOT_ATTEMPTED, and ``summary`` turns grade rates into the official metrics.

Parsing is strict: the reply must be one of the letters A/B/C or a grade name (``A: CORRECT`` also accepted);
anything else is unparsable (the official script silently reads it as NOT_ATTEMPTED; we mark it unscored).
"""

from __future__ import annotations

from typing import Literal

from mara_bench.judges.rewards import GraderRequest
from mara_bench.judges.templates import load_prompt
from mara_bench.judges.verdicts import bare_token

PROMPT_NAME = "simpleqa_grader"
Grade = Literal["CORRECT", "INCORRECT", "NOT_ATTEMPTED"]
GRADES: tuple[Grade, ...] = ("CORRECT", "INCORRECT", "NOT_ATTEMPTED")
_READINGS: dict[str, Grade] = {
    **{letter: grade for letter, grade in zip("abc", GRADES, strict=True)},
    **{grade.lower(): grade for grade in GRADES},
    "not attempted": "NOT_ATTEMPTED",
    **{f"{letter}: {grade.lower()}": grade for letter, grade in zip("abc", GRADES, strict=True)},
}


def grader_prompt(question: str, target: str, predicted_answer: str) -> str:
    """The official SimpleQA grader prompt for one response."""
    return load_prompt(PROMPT_NAME).format(
        question=question, target=target, predicted_answer=predicted_answer
    )


def parse_grade(reply: str) -> Grade | None:
    """The grade in ``reply``, or None when the reply is not exactly one grade."""
    return _READINGS.get(bare_token(reply))


def reward_request(question: str, gold: str, response: str) -> GraderRequest:
    """The grader request of one training reward, exactly as the scorer asks: the official prompt and the strict
    parser."""
    return GraderRequest(grader_prompt(question, gold, response), parse_grade)


def verdict_reward(grade: Grade) -> float:
    """The training reward of a grade: 1.0 for ``CORRECT``, else 0.0 (MATPO's reward, arXiv:2510.04678)."""
    return float(grade == "CORRECT")


def summary(correct: float, incorrect: float, not_attempted: float) -> dict[str, float]:
    """The official SimpleQA metrics from the rates of each grade over all items (unscored items in none).

    correct and not_attempted are reported as given; correct_given_attempted = correct / (correct + incorrect);
    F is the harmonic mean of correct and correct_given_attempted (0.0 where a denominator is 0, as officially).
    """
    attempted = correct + incorrect
    given_attempted = correct / attempted if attempted else 0.0
    harmonic = (
        2 * given_attempted * correct / (given_attempted + correct) if given_attempted + correct else 0.0
    )
    return {
        "correct": correct,
        "not_attempted": not_attempted,
        "correct_given_attempted": given_attempted,
        "f": harmonic,
    }
