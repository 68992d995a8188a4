"""Humanity's Last Exam judging, as the official repository (centerforaisafety/hle) does it.

- ``judge_prompt``: the official judge prompt (``judges/prompts/hle_judge.txt``); ``RESPONSE_SCHEMA``: its structured
  output (extracted_final_answer, reasoning, correct yes/no, confidence 0-100).
- ``parse_verdict``: the judge's reply as JSON matching the schema, else a strict ``label: value`` text form. As in
  the official ``run_judge_results.py`` (a pydantic model with ``confidence: int``, parsed in lax mode), a confidence
  sent as ``"85"`` or ``85.0`` is the number 85 and one outside 0-100 (``150``) is kept as reported;
  ``clamped_confidence`` puts it into 0-100 for calibration and scorers count it as out of range. A reply whose
  verdict is clear is never unscored because of its confidence: a missing or non-numeric one is unknown (None).
- ``wald_half_width`` and ``calibration_error``: the official metrics (confidences in percent, as judges report).

``calibration_error(method="official")`` follows ``calib_err`` in ``hle_eval/run_judge_results.py`` exactly: items
sorted by confidence are cut into ``n // beta`` bins of ``beta``, the last bin is stretched to absorb the remainder
and then *left out* of the sum, and each used bin is weighted by ``beta / n`` over all n items. For n = 250 only
the first 100 items count (weight 0.4); for n = 300 the first 200 (two bins, weight 1/3 each). Below ``2 * beta``
items no bin is used (the official code prints 0.0 for 100-199 items and crashes below 100); we return None there.
``method="all_bins"`` is inspect_evals' HLE ``cerr``: bins of ``min(beta, n)`` items, ``n // beta`` of them, the last
stretched to absorb the remainder, *every* bin used, each weighted by its size / n (n = 250: bins of 100 and 150).
Both sort with numpy's default ``np.argsort`` over the same float64 array as the reference, so items with tied
confidences fall in the same bins as there; confidences are converted as each reference does (``all_bins``
truncates a non-integer confidence with ``int()``, as inspect_evals does). Test vectors computed by running both
references: ``tests/judges/vectors/hle_calibration.json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from inspect_ai.model import ResponseSchema
from inspect_ai.util import json_schema
from pydantic import BaseModel, ValidationError, field_validator

from mara_bench.judges.rewards import GraderRequest
from mara_bench.judges.templates import load_prompt
from mara_bench.judges.verdicts import json_object, labelled_values, parse_yes_no

if TYPE_CHECKING:
    import numpy as np

PROMPT_NAME = "hle_judge"
CALIBRATION_METHODS = ("official", "all_bins")
DEFAULT_BIN_SIZE = 100


class _JudgeReply(BaseModel):
    """The official structured output of the HLE judge (the schema the grader is asked to follow)."""

    extracted_final_answer: str
    reasoning: str
    correct: Literal["yes", "no"]
    confidence: int


class _LaxJudgeReply(BaseModel):
    """How a structured reply is read: the verdict strictly, the confidence as any number the official pydantic
    parse accepts (numeric strings and floats too; unknown when missing or not a number)."""

    extracted_final_answer: str
    reasoning: str
    correct: Literal["yes", "no"]
    confidence: float | None = None

    @field_validator("confidence", mode="before")
    @classmethod
    def _number_or_unknown(cls, value: object) -> float | None:
        return _as_confidence(value)


RESPONSE_SCHEMA = ResponseSchema(
    name="hle_judgement",
    json_schema=json_schema(_JudgeReply),
    description="The HLE judge's extracted answer, reasoning, verdict and confidence.",
    strict=True,
)


@dataclass(frozen=True)
class HleVerdict:
    """One judgement: the answer the judge extracted, its reasoning, the verdict and the response's confidence (%)."""

    extracted_final_answer: str | None
    reasoning: str
    correct: bool
    confidence: float | None
    """As the judge reported it (possibly outside 0-100); None when it gave no number."""


def judge_prompt(question: str, response: str, correct_answer: str) -> str:
    """The official HLE judge prompt for one response."""
    return load_prompt(PROMPT_NAME).format(
        question=question, response=response, correct_answer=correct_answer
    )


def _single(values: list[str]) -> str | None:
    """The one value given (repeats allowed if identical), else None."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def _as_confidence(value: object) -> float | None:
    """A reported confidence as a number: ints, floats and numeric strings (``"85"``, ``"85%"``); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip(" *_`'\"").removesuffix("%").strip()
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def clamped_confidence(confidence: float) -> float:
    """``confidence`` put into 0-100, as calibration needs it."""
    return min(100.0, max(0.0, confidence))


def confidence_out_of_range(confidence: float | None) -> bool:
    """Whether the judge reported a confidence outside 0-100."""
    return confidence is not None and not 0 <= confidence <= 100


def _from_json(reply: dict) -> HleVerdict | None:
    try:
        parsed = _LaxJudgeReply.model_validate(reply)
    except ValidationError:
        return None
    return HleVerdict(
        extracted_final_answer=parsed.extracted_final_answer,
        reasoning=parsed.reasoning,
        correct=parsed.correct == "yes",
        confidence=parsed.confidence,
    )


def _from_text(reply: str) -> HleVerdict | None:
    verdict_text = _single(labelled_values(reply, "correct"))
    confidence_text = _single(labelled_values(reply, "confidence"))
    verdict = parse_yes_no(verdict_text) if verdict_text is not None else None
    if verdict is None:
        return None
    confidence = _as_confidence(confidence_text) if confidence_text is not None else None
    extracted = _single(labelled_values(reply, "extracted_final_answer"))
    reasoning = _single(labelled_values(reply, "reasoning"))
    return HleVerdict(
        extracted_final_answer=extracted, reasoning=reasoning or "", correct=verdict, confidence=confidence
    )


def parse_verdict(reply: str) -> HleVerdict | None:
    """The judgement in ``reply`` (schema JSON, or ``correct:``/``confidence:`` lines), or None when unparsable."""
    as_json = json_object(reply)
    return _from_json(as_json) if as_json is not None else _from_text(reply)


def reward_request(question: str, gold: str, response: str) -> GraderRequest:
    """The grader request of one training reward, exactly as the scorer asks: the official prompt, the strict
    parser and the structured-output schema."""
    return GraderRequest(judge_prompt(question, response, gold), parse_verdict, RESPONSE_SCHEMA)


def verdict_reward(verdict: HleVerdict) -> float:
    """The training reward of a verdict: 1.0 for ``correct: yes``, else 0.0 (MARS's reward, arXiv:2510.04935
    C.3)."""
    return float(verdict.correct)


def wald_half_width(accuracy_percent: float, n: int) -> float:
    """Half-width of the Wald 95% interval, in percentage points: 1.96 * sqrt(p * (100 - p) / n)."""
    if n <= 0:
        raise ValueError(f"wald_half_width needs n >= 1 questions, got n={n}")
    if not 0 <= accuracy_percent <= 100:
        raise ValueError(f"accuracy_percent must be in [0, 100] (a percentage), got {accuracy_percent}")
    return 1.96 * math.sqrt(accuracy_percent * (100 - accuracy_percent) / n)


def calibration_undefined_reason(
    n: int, method: str = "official", beta: int = DEFAULT_BIN_SIZE
) -> str | None:
    """Why ``calibration_error`` is None for ``n`` items, or None when it is defined."""
    if method == "official" and n < 2 * beta:
        return (
            f"official calibration error is undefined for {n} judged items: the official algorithm drops its last "
            f"bin of {beta}, so it needs at least {2 * beta} (method='all_bins' works from 1 item)"
        )
    if n == 0:
        return "calibration error is undefined with no judged items"
    return None


def calibration_error(
    confidences: Sequence[float],
    correct: Sequence[bool],
    method: str = "official",
    beta: int = DEFAULT_BIN_SIZE,
) -> float | None:
    """RMS calibration error as a fraction (0-1); confidences in percent (0-100). None where undefined.

    See the module docstring for the two methods; ``calibration_undefined_reason`` says why a result is None.
    """
    if method not in CALIBRATION_METHODS:
        raise ValueError(
            f"Unknown calibration method {method!r}; valid methods: {', '.join(CALIBRATION_METHODS)}"
        )
    if len(confidences) != len(correct):
        raise ValueError(
            f"confidences ({len(confidences)}) and correct ({len(correct)}) must have the same length"
        )
    if beta < 1:
        raise ValueError(f"beta (the bin size) must be >= 1, got {beta}")
    if any(not 0 <= c <= 100 for c in confidences):
        raise ValueError("confidences must be percentages in [0, 100], as the HLE judge reports them")
    n = len(confidences)
    if calibration_undefined_reason(n, method, beta) is not None:
        return None
    import numpy as np  # here, not at import: the Inspect entry point imports this module

    probabilities, outcomes = _reference_arrays(confidences, correct, method)
    order = np.argsort(probabilities)  # numpy's default kind, as both references: ties land in numpy's order
    probabilities, outcomes = probabilities[order], outcomes[order]
    if method == "all_bins":
        beta = min(beta, n)
    bins = [[start, start + beta] for start in range(0, (n // beta) * beta, beta)]
    bins[-1][1] = n  # the last bin absorbs the remainder
    if method == "official":
        bins = bins[:-1]  # ... and the official code then leaves it out
    squared_error = 0.0
    for start, end in bins:
        difference = np.abs(np.nanmean(probabilities[start:end]) - np.nanmean(outcomes[start:end]))
        squared_error += (end - start) / n * np.square(difference)
    return float(np.sqrt(squared_error))


def _reference_arrays(
    confidences: Sequence[float], correct: Sequence[bool], method: str
) -> tuple[np.ndarray, np.ndarray]:
    """Confidences (as probabilities) and outcomes with the dtypes and conversion each reference uses: the
    official ``np.array(confidence) / 100`` over a bool array; inspect_evals ``int(confidence) / 100.0`` (a
    non-integer confidence is truncated) over 1.0/0.0 floats."""
    import numpy as np

    if method == "official":
        return np.array(confidences) / 100, np.array(correct, dtype=bool)
    truncated = [int(confidence) / 100.0 for confidence in confidences]
    return np.array(truncated), np.array([1.0 if ok else 0.0 for ok in correct])
