"""The pure cores of the rule-based judges: response text and gold in, score out, no Inspect state.

The Inspect scorers (``mara_bench.judges.scorers``) call these functions, and so do the training rewards the judges
register (``math_reward``, ``lexical_reward``: ``mara_bench.judges.rewards``), so a training reward and an evaluation
score of the same response can never differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


LEXICAL_METRICS = ("em", "acc", "f1")
"""The values of the ``lexical`` judge a training reward can be (``metric``)."""


def math_reward(response: str, golds: str | Sequence[str], options: Mapping[str, Any]) -> float:
    """1.0 when the response's final answer equals the (first) gold, else 0.0 -- the ``math`` judge's reward."""
    gold = golds if isinstance(golds, str) else golds[0]
    return float(math_verdict(response, gold)[1])


def lexical_reward(response: str, golds: str | Sequence[str], options: Mapping[str, Any]) -> float:
    """The ``lexical`` judge's reward: its ``metric`` value (``em`` by default, ``acc`` or ``f1``) under its
    ``variant``; an item M-ASK's variant leaves out of F1 falls back to its ``em``."""
    values = lexical_values(response, golds, options.get("variant", "flashrag"))[1]
    value = values[options.get("metric", "em")]
    return float(values["em"] if value is None else value)


def check_lexical_options(options: Mapping[str, Any], where: str) -> None:
    """Raise a ``ValueError`` for a ``variant`` or ``metric`` the ``lexical`` reward does not know."""
    lexical.check_variant(options.get("variant", "flashrag"))
    if options.get("metric", "em") not in LEXICAL_METRICS:
        raise ValueError(
            f"{where}.metric must be one of {', '.join(LEXICAL_METRICS)}; got {options['metric']!r}"
        )
