"""Inspect @scorer functions for every judge, registered with Inspect through the package's entry point.

Each scorer reads the text to judge with ``response_to_judge(state, answer)`` (``answer="solver"`` scores the V-C
system's Solver answer with the same judge). The math, lexical and GAIA judges compare the answer marked in that
text (``\\boxed{}``, ``<answer>``, ``ANSWER:`` line; see ``mara_bench.judges.math.extract_answer``), the lexical and GAIA
judges falling back to the whole text when nothing is marked; LLM judges see the whole text. Each scorer puts the
extracted answer in ``Score.answer`` (maj@k groups by it) and the judge's details in ``Score.metadata``. Values are
dicts (keys described in ``mara_bench.judges.metrics``). LLM judges take their model from the ``grader`` role; an attempt they
cannot judge is *unscored* (``judged_correct`` NaN, ``reason="grader_failed"``), counted by the ``unscored`` metric
and never in accuracy over judged items. Every LLM judge takes ``attempts``, ``timeout`` (seconds per grader call)
and ``cache`` (see ``mara_bench.judges.grader``); a timed-out judgement is unscored and the eval goes on. ``grader_role``
names the role whose model grades (``grader2``: a second judge of the same samples, ``mara_bench.judges.registry.get_judge``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from inspect_ai.model import CachePolicy
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from mara_bench.judges import cores, equivalence, hle, lexical, simpleqa
from mara_bench.judges import math as math_judge
from mara_bench.judges.gaia import quasi_exact_match
from mara_bench.judges.grader import (
    DEFAULT_ATTEMPTS,
    DEFAULT_TIMEOUT_S,
    GRADER_ROLE,
    GraderOutcome,
    ask_grader,
    check_bounds,
)
from mara_bench.judges.metrics import (
    calibration,
    lexical_summary,
    simpleqa_summary,
    unscored,
    verdict_summary,
    wald_interval,
)
from mara_bench.judges.response import response_to_judge

NAN = float("nan")
VERDICT_METRICS = [verdict_summary(), unscored()]


def _verdict_value(verdict: bool | None) -> dict[str, float]:
    """``correct`` (unscored counted as 0) and ``judged_correct`` (NaN when unscored)."""
    if verdict is None:
        return {"correct": 0.0, "judged_correct": NAN}
    return {"correct": float(verdict), "judged_correct": float(verdict)}


def _no_response(value: dict[str, float], answer: str) -> Score:
    """The score of a sample whose system stored no ``answer``: wrong (the model's failure, not the judge's)."""
    return Score(value=value, answer=None, reason="no_response", explanation=f"no '{answer}' answer to judge")


Judge = Callable[[TaskState, Target, str], Awaitable[Score]]
"""Judges one sample's response (the text to judge, never missing)."""


def _judging(answer: str, missing: dict[str, float], judge: Judge) -> Scorer:
    """The scorer that reads the text to judge (``response_to_judge(state, answer)``) and hands it to ``judge``;
    a sample without that answer scores ``missing`` (wrong: the model's failure, not the judge's)."""

    async def score(state: TaskState, target: Target) -> Score:
        response = response_to_judge(state, answer)
        if response is None:
            return _no_response(missing, answer)
        return await judge(state, target, response)

    return score


def _graded(
    value: dict[str, float], outcome: GraderOutcome[Any], answer: str | None, **details: Any
) -> Score:
    """The score of an LLM judgement, marked unscored when the grader gave no verdict."""
    return Score(
        value=value,
        answer=answer,
        reason=None if outcome.verdict is not None else "grader_failed",
        explanation=outcome.replies[-1] if outcome.replies else outcome.failure,
        metadata=outcome.details() | details,
    )


@scorer(metrics=VERDICT_METRICS, name="math")
def math_scorer(answer: str = "final") -> Scorer:
    """Final-answer extraction and math-verify equivalence; integer answers compared as integers."""

    async def judge(state: TaskState, target: Target, response: str) -> Score:
        extracted, correct = cores.math_verdict(response, target.text)
        return Score(value=_verdict_value(correct), answer=extracted, metadata={"judge": "math"})

    return _judging(answer, _verdict_value(False), judge)


@scorer(metrics=[lexical_summary()], name="lexical")
def lexical_scorer(answer: str = "final", variant: str = "flashrag") -> Scorer:
    """EM, cover-EM ("acc") and token F1 against every gold answer (``variant``: "flashrag" or M-ASK's "mask")."""
    lexical.check_variant(variant)  # at task creation, before any sample runs

    async def score(state: TaskState, target: Target) -> Score:
        response = response_to_judge(state, answer) or ""
        prediction, values = cores.lexical_values(response, target.target, variant)
        return Score(
            value={key: NAN if v is None else v for key, v in values.items()},
            answer=prediction,
            metadata={"judge": "lexical", "variant": variant, "f1_excluded": values["f1"] is None},
        )

    return score


async def _equivalence_outcome(
    state: TaskState, golds: list[str], response: str, bounds: dict[str, Any]
) -> GraderOutcome[bool]:
    prompt = equivalence.judge_prompt(state.input_text, golds, response)
    return await ask_grader("equivalence", prompt, equivalence.parse_verdict, **bounds)


def _grader_options(
    attempts: int, cache: bool | CachePolicy, timeout: float, grader_role: str
) -> dict[str, Any]:
    """The ``ask_grader`` options of an LLM judge, checked when its scorer is built (before any sample runs)."""
    check_bounds(attempts, timeout)
    return {"attempts": attempts, "cache": cache, "timeout": timeout, "role": grader_role}


@scorer(metrics=VERDICT_METRICS, name="equivalence")
def equivalence_scorer(
    answer: str = "final",
    attempts: int = DEFAULT_ATTEMPTS,
    cache: bool | CachePolicy = True,
    timeout: float = DEFAULT_TIMEOUT_S,
    grader_role: str = GRADER_ROLE,
) -> Scorer:
    """An LLM (the grader role) answers yes/no: does the response match one of the gold answers?"""
    bounds = _grader_options(attempts, cache, timeout, grader_role)

    async def judge(state: TaskState, target: Target, response: str) -> Score:
        outcome = await _equivalence_outcome(state, target.target, response, bounds)
        return _graded(_verdict_value(outcome.verdict), outcome, response, judge="equivalence")

    return _judging(answer, _verdict_value(False), judge)


@scorer(metrics=VERDICT_METRICS, name="gaia")
def gaia_scorer(
    answer: str = "final",
    cascade: bool = False,
    list_final_stop: bool = False,
    attempts: int = DEFAULT_ATTEMPTS,
    cache: bool | CachePolicy = True,
    timeout: float = DEFAULT_TIMEOUT_S,
    grader_role: str = GRADER_ROLE,
) -> Scorer:
    """GAIA's quasi-exact match, the official verdict by default (a declared answer's final full stop kept, as the
    official scorer sees it); ``list_final_stop=True``: our leniency, a full stop ending a list answer ignored;
    ``cascade=True``: a miss is re-judged by the LLM equivalence judge."""
    bounds = _grader_options(attempts, cache, timeout, grader_role)

    async def judge(state: TaskState, target: Target, response: str) -> Score:
        extracted = math_judge.extract_answer(response, keep_final_stop=True) or response.strip()
        matched = quasi_exact_match(extracted, target.text, list_final_stop=list_final_stop)
        if matched or not cascade:
            return Score(
                value=_verdict_value(matched), answer=extracted, metadata={"judge": "gaia", "by": "qem"}
            )
        outcome = await _equivalence_outcome(state, [target.text], extracted, bounds)
        return _graded(_verdict_value(outcome.verdict), outcome, extracted, judge="gaia", by="equivalence")

    return _judging(answer, _verdict_value(False), judge)


@scorer(metrics=[simpleqa_summary(), unscored()], name="simpleqa")
def simpleqa_scorer(
    answer: str = "final",
    attempts: int = DEFAULT_ATTEMPTS,
    cache: bool | CachePolicy = True,
    timeout: float = DEFAULT_TIMEOUT_S,
    grader_role: str = GRADER_ROLE,
) -> Scorer:
    """The official SimpleQA grader: CORRECT / INCORRECT / NOT_ATTEMPTED."""
    bounds = _grader_options(attempts, cache, timeout, grader_role)

    async def judge(state: TaskState, target: Target, response: str) -> Score:
        prompt = simpleqa.grader_prompt(state.input_text, target.text, response)
        outcome = await ask_grader("simpleqa", prompt, simpleqa.parse_grade, **bounds)
        grade = outcome.verdict
        value = _verdict_value(None if grade is None else grade == "CORRECT")
        value |= {"incorrect": float(grade == "INCORRECT"), "not_attempted": float(grade == "NOT_ATTEMPTED")}
        return _graded(value, outcome, response, judge="simpleqa", grade=grade)

    missing = {**_verdict_value(False), "incorrect": 0.0, "not_attempted": 1.0}
    return _judging(answer, missing, judge)


@scorer(metrics=[verdict_summary(), wald_interval(), unscored(), calibration()], name="hle")
def hle_scorer(
    answer: str = "final",
    structured: bool = True,
    attempts: int = DEFAULT_ATTEMPTS,
    cache: bool | CachePolicy = True,
    timeout: float = DEFAULT_TIMEOUT_S,
    grader_role: str = GRADER_ROLE,
) -> Scorer:
    """The official HLE judge (structured output where the grader's provider supports it, strict text fallback)."""
    bounds = _grader_options(attempts, cache, timeout, grader_role)

    async def judge(state: TaskState, target: Target, response: str) -> Score:
        prompt = hle.judge_prompt(state.input_text, response, target.text)
        schema = hle.RESPONSE_SCHEMA if structured else None
        outcome = await ask_grader("hle", prompt, hle.parse_verdict, schema=schema, **bounds)
        verdict = outcome.verdict
        confidence = None if verdict is None else verdict.confidence
        value = _verdict_value(None if verdict is None else verdict.correct)
        value["confidence"] = NAN if confidence is None else hle.clamped_confidence(confidence)
        value["confidence_out_of_range"] = float(hle.confidence_out_of_range(confidence))
        extracted = None if verdict is None else verdict.extracted_final_answer
        reasoning = None if verdict is None else verdict.reasoning
        return _graded(
            value, outcome, extracted, judge="hle", reasoning=reasoning, reported_confidence=confidence
        )

    missing = {**_verdict_value(False), "confidence": NAN, "confidence_out_of_range": 0.0}
    return _judging(answer, missing, judge)
