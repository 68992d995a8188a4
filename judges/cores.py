"""The pure cores of the rule-based judges: response text and gold in, score out, no Inspect state.

The Inspect scorers (``mara_bench.judges.scorers``) and the trainer's rewards (``mara_bench.trainer.algorithms.rewards``) call these
same functions, so a training reward and an evaluation score of the same response can never differ.
"""

from __future__ import annotations

from collections.abc import Sequence

from mara_bench.judges import lexical
from mara_bench.judges import math as math_judge


def math_verdict(response: str, gold: str) -> tuple[str | None, bool]:
    """(the extracted final answer, whether it equals ``gold``) -- the ``math`` judge."""
    extracted = math_judge.extract_answer(response)
    return extracted, math_judge.is_equivalent(extracted, gold)


def lexical_values(
    response: str, golds: str | Sequence[str], variant: str = "flashrag"
) -> tuple[str, dict[str, float | None]]:
    """(the prediction judged: the marked answer, else the whole response; its em/acc/f1/precision/recall
    against ``golds`` under ``variant``) -- the ``lexical`` judge."""
    prediction = math_judge.extract_answer(response) or response
    return prediction, lexical.score(prediction, golds, variant=variant)
