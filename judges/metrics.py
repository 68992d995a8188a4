"""Inspect metrics for the judges' dict-valued scores.

Score values (per attempt) use these keys:

- ``correct``: 1.0 / 0.0 with an unscored attempt counted as 0 (the official convention for accuracy over all);
- ``judged_correct``: the same verdict, NaN when the attempt is unscored (only LLM judges leave attempts unscored);
- ``confidence``: the response's confidence in percent put into 0-100, NaN when unknown (HLE only), and
  ``confidence_out_of_range``: 1.0 when the judge reported it outside 0-100 (the raw value is in the metadata);
- SimpleQA adds ``incorrect`` and ``not_attempted``; the lexical judge uses ``em``, ``acc``, ``f1``, ``precision``,
  ``recall`` (NaN = excluded from that average, M-ASK's yes/no rule).

Epoch reducers work key by key and skip NaN, so ``mean`` turns ``correct`` into avg@k with unscored attempts
counted wrong. Metrics declared ``scores="unreduced"`` (unscored count, calibration) see every attempt.
Undefined values are reported as NaN.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from inspect_ai.scorer import Metric, SampleScore, Value, metric

from mara_bench.judges.hle import calibration_error, calibration_undefined_reason, wald_half_width
from mara_bench.judges.simpleqa import summary

logger = logging.getLogger(__name__)
NAN = float("nan")


def is_unscored(value: object) -> bool:
    """Whether a score value is an attempt the grader could not judge: NaN, or a dict whose ``judged_correct`` is NaN."""
    if isinstance(value, dict):
        value = value.get("judged_correct")
    return isinstance(value, float) and math.isnan(value)


def _column(scores: Sequence[SampleScore], key: str) -> list[float]:
    """Every score's ``key`` as a float (NaN kept)."""
    column: list[float] = []
    for sample_score in scores:
        value = sample_score.score.value
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"Score of sample {sample_score.sample_id} has no {key!r} entry: {value!r}")
        column.append(NAN if value[key] is None else float(value[key]))
    return column


def _mean(values: Sequence[float]) -> float:
    """Mean of the non-NaN values (NaN when there are none)."""
    present = [v for v in values if not math.isnan(v)]
    return sum(present) / len(present) if present else NAN


def _stderr(values: Sequence[float]) -> float:
    if len(values) < 2:
        return NAN
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


@metric
def verdict_summary() -> Metric:
    """accuracy (over all, unscored = wrong), its stderr, and accuracy_judged (over judged items only)."""

    def compute(scores: list[SampleScore]) -> Value:
        correct = _column(scores, "correct")
        judged = _column(scores, "judged_correct")
        return {"accuracy": _mean(correct), "stderr": _stderr(correct), "accuracy_judged": _mean(judged)}

    return compute


@metric(scores="unreduced")
def unscored() -> Metric:
    """How many attempts the grader could not judge (unparsable replies or failed calls after retries)."""

    def compute(scores: list[SampleScore]) -> Value:
        return float(sum(1 for v in _column(scores, "judged_correct") if math.isnan(v)))

    return compute


@metric
def wald_interval() -> Metric:
    """Half-width (percentage points) of the Wald 95% interval of accuracy over all items, as HLE reports it."""

    def compute(scores: list[SampleScore]) -> Value:
        present = [v for v in _column(scores, "correct") if not math.isnan(v)]
        if not present:  # no sample yet, or (while epochs run) a pass@k still undefined
            return {"wald_half_width": NAN}
        return {"wald_half_width": wald_half_width(100 * _mean(present), len(present))}

    return compute


@metric(scores="unreduced")
def calibration() -> Metric:
    """HLE's RMS calibration error (fraction) the official way and over all bins (inspect_evals' way), from every
    judged attempt with a known confidence; and how many attempts had a confidence outside 0-100 (clamped)."""

    def compute(scores: list[SampleScore]) -> Value:
        pairs = [
            (confidence, verdict == 1.0)
            for confidence, verdict in zip(
                _column(scores, "confidence"), _column(scores, "judged_correct"), strict=True
            )
            if not (math.isnan(confidence) or math.isnan(verdict))
        ]
        confidences, correct = [c for c, _ in pairs], [ok for _, ok in pairs]
        result = {"confidence_out_of_range": sum(_column(scores, "confidence_out_of_range"))}
        for method, name in (("official", "calibration_error"), ("all_bins", "calibration_error_all_bins")):
            error = calibration_error(confidences, correct, method=method)
            if error is None:
                _warn_once(method, calibration_undefined_reason(len(pairs), method))
            result[name] = NAN if error is None else error
        return result

    return compute


_warned: set[str] = set()
"""The calibration methods whose undefined value was already said in this process."""


def _warn_once(method: str, reason: str | None) -> None:
    """Say once per process why a calibration method is undefined (Inspect computes the metric per scorer and
    reducer, so a small HLE run would say it several times)."""
    if method not in _warned:
        _warned.add(method)
        logger.warning(reason)


@metric
def simpleqa_summary() -> Metric:
    """The official SimpleQA metrics (correct, not_attempted, correct_given_attempted, F; unscored items in no
    grade) and accuracy_judged: the CORRECT rate over the items the grader judged."""

    def compute(scores: list[SampleScore]) -> Value:
        if not scores:
            return summary(NAN, NAN, NAN) | {"accuracy_judged": NAN}
        rates = (_mean(_column(scores, key)) for key in ("correct", "incorrect", "not_attempted"))
        return summary(*rates) | {"accuracy_judged": _mean(_column(scores, "judged_correct"))}

    return compute


@metric
def lexical_summary() -> Metric:
    """Means of em, acc, f1, precision and recall (NaN entries left out), and how many items left the F1 mean."""

    def compute(scores: list[SampleScore]) -> Value:
        variants = {(s.score.metadata or {}).get("variant") for s in scores}
        if len(variants) > 1:
            raise ValueError(
                f"Refusing to average lexical scores of different variants together: {sorted(variants)}"
            )
        result = {key: _mean(_column(scores, key)) for key in ("em", "acc", "f1", "precision", "recall")}
        result["f1_excluded"] = float(sum(1 for v in _column(scores, "f1") if math.isnan(v)))
        return result

    return compute
