"""Compare tonight's runs with their baselines and flag statistically significant regressions.

A comparison pairs a candidate run with a baseline run on the same task, system and protocol: the previous night
of the same checkpoint, a run from ``--baseline`` logs, or another checkpoint named in the suite's ``comparisons``.
Runs on a different dataset (hash), judged differently, or that saw other tool responses (another tool snapshot,
or the live web against a snapshot) are "not comparable" — never a regression. Comparable
pairs are tested on their common sample ids (:mod:`mara_bench.leaderboards.stats`) and the p-values of the whole night are
adjusted together (Holm or BH) before deciding. Each tested pair also reports the smallest drop it could detect
(80% power, from its observed discordance), so "no regression" on too few samples reads as such. A regression on an
LLM-judged task whose runs were also judged by a second grader (``-T second_grader=``, scores ``<judge>_grader2``)
is *confirmed* when the same test on the second grader's verdicts passes the same bar, else *judge-sensitive*; the
suite's ``settings.fail_on`` says which fail the night.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from mara_bench.judges import registry as judge_registry
from mara_bench.judges.grader import SECOND_GRADER_ROLE
from mara_bench.leaderboards.stats import PairedTest, adjust, minimum_detectable_drop, paired_drop_test
from mara_bench.leaderboards.store import HistoryStore, Run
from mara_bench.leaderboards.suite import Suite

REGRESSION = "regression"
NO_REGRESSION = "no regression"
NOT_COMPARABLE = "not comparable"
SHOWN_FLIPS = 20

CONFIRMED = "confirmed"
"""A regression the second grader's verdicts show too."""
JUDGE_SENSITIVE = "judge-sensitive"
"""A regression that does not survive the second grader's verdicts."""
DETERMINISTIC_JUDGE = "deterministic judge"
"""A regression scored by a judge that asks no LLM (math, lexical, GAIA's exact match): nothing to re-judge."""
SINGLE_JUDGE = "single judge"
"""A regression scored by an LLM judge with no second grader in the runs: unchecked."""
CHECKED_OK = (CONFIRMED, DETERMINISTIC_JUDGE)
"""Judge checks a ``fail_on: confirmed`` suite fails on."""


@dataclass(frozen=True)
class SampleFlip:
    """A sample the candidate scored lower than the baseline, with both answers (model text: escape it)."""

    sample_id: str
    baseline_value: float
    candidate_value: float
    baseline_answer: str | None
    candidate_answer: str | None


@dataclass
class Comparison:
    kind: str
    candidate: Run
    baseline: Run
    score: str | None
    status: str = NO_REGRESSION
    reason: str | None = None
    test: PairedTest | None = None
    p_adjusted: float | None = None
    flips: list[SampleFlip] = field(default_factory=list)
    detectable_drop: float | None = None
    """The smallest drop this comparison detects with 80% power (``stats.minimum_detectable_drop``)."""
    judge_check: str | None = None
    """For a regression: ``confirmed``, ``judge-sensitive``, ``deterministic judge`` or ``single judge``."""
    second_judge_test: PairedTest | None = None
    """The same test on the second grader's verdicts, when both runs have them."""
    discordance: float = 0.0
    """Share of the common samples the two runs scored differently."""


def compare_pair(store: HistoryStore, candidate: Run, baseline: Run, kind: str) -> Comparison:
    """Test one candidate against one baseline (unadjusted); checks comparability first."""
    score = candidate.headline_score
    comparison = Comparison(kind=kind, candidate=candidate, baseline=baseline, score=score)
    reason = _not_comparable_reason(candidate, baseline)
    if reason is None:
        candidate_scores = store.sample_scores(candidate.id, score)
        baseline_scores = store.sample_scores(baseline.id, score)
        common = sorted(set(candidate_scores) & set(baseline_scores))
        if not common:
            reason = f"no common scored samples for score {score!r}"
        else:
            base = np.array([baseline_scores[i][0] for i in common])
            cand = np.array([candidate_scores[i][0] for i in common])
            comparison.test = paired_drop_test(base, cand, seed=_seed(candidate, baseline))
            comparison.discordance = float(np.mean(base != cand))
            comparison.flips = _flips(common, baseline_scores, candidate_scores)
            comparison.second_judge_test = _second_judge_test(store, candidate, baseline, score, common)
    if reason is not None:
        comparison.status, comparison.reason = NOT_COMPARABLE, reason
    return comparison


def decide(
    comparisons: list[Comparison], alpha: float = 0.05, correction: str = "holm", min_effect: float = 0.0
) -> list[Comparison]:
    """Adjust the p-values of all comparable comparisons together and mark the significant drops."""
    tested = [c for c in comparisons if c.test is not None]
    for comparison, p_adjusted in zip(
        tested, adjust([c.test.p_value for c in tested], correction), strict=True
    ):
        comparison.p_adjusted = p_adjusted
        dropped = comparison.test.delta < -min_effect
        comparison.status = REGRESSION if p_adjusted < alpha and dropped else NO_REGRESSION
        comparison.detectable_drop = minimum_detectable_drop(
            comparison.test.n, comparison.discordance, alpha, comparisons=len(tested)
        )
        if comparison.status == REGRESSION:
            comparison.judge_check = _judge_check(comparison, alpha, min_effect)
    return comparisons


def _judge_check(comparison: Comparison, alpha: float, min_effect: float) -> str:
    """Whether a regression survives the second grader: its test on the second grader's verdicts, with the p-value
    scaled by the same multiplicity factor as the first (adjusted / raw), must pass the same bar."""
    second = comparison.second_judge_test
    if second is not None:
        factor = comparison.p_adjusted / comparison.test.p_value if comparison.test.p_value > 0 else 1.0
        survives = min(1.0, second.p_value * factor) < alpha and second.delta < -min_effect
        return CONFIRMED if survives else JUDGE_SENSITIVE
    judge = comparison.candidate.judge
    if judge in judge_registry.JUDGES and not judge_registry.is_llm_judge(judge):
        return DETERMINISTIC_JUDGE
    return SINGLE_JUDGE


def _second_judge_test(
    store: HistoryStore, candidate: Run, baseline: Run, score: str, common: list[str]
) -> PairedTest | None:
    """The paired test on the second grader's verdicts (score ``<headline>_grader2``) over the samples both runs
    have them for, or None when either run has none."""
    name = f"{score}_{SECOND_GRADER_ROLE}"
    candidate_scores = store.sample_scores(candidate.id, name)
    baseline_scores = store.sample_scores(baseline.id, name)
    shared = [i for i in common if i in candidate_scores and i in baseline_scores]
    if not shared:
        return None
    base = np.array([baseline_scores[i][0] for i in shared])
    cand = np.array([candidate_scores[i][0] for i in shared])
    return paired_drop_test(base, cand, seed=_seed(candidate, baseline))


def should_fail(comparison: Comparison, fail_on: str) -> bool:
    """Whether a comparison fails the night: any regression (``fail_on: any``), or only one the judges agree on
    (``fail_on: confirmed``: confirmed by the second grader, or scored by a deterministic judge)."""
    if comparison.status != REGRESSION:
        return False
    return fail_on == "any" or comparison.judge_check in CHECKED_OK


def nightly_comparisons(
    store: HistoryStore, night: str, suite: Suite | None = None, baseline_runs: list[Run] | None = None
) -> list[Comparison]:
    """Every comparison for ``night``: each series vs its baseline, plus the suite's checkpoint pairs, decided."""
    tonight = _latest_by_series(
        [r for r in store.runs(night=night) if suite is None or r.suite in (None, suite.name)]
    )
    comparisons = []
    for candidate in tonight.values():
        baseline, kind = _baseline_for(store, candidate, baseline_runs)
        if baseline is not None:
            comparisons.append(compare_pair(store, candidate, baseline, kind))
    for pair in suite.comparisons if suite else ():
        for (checkpoint, *rest), candidate in tonight.items():
            reference = tonight.get((pair.baseline, *rest))
            if checkpoint == pair.candidate and reference is not None:
                comparisons.append(compare_pair(store, candidate, reference, "checkpoint pair"))
    settings = suite.settings if suite else None
    return decide(
        comparisons,
        alpha=settings.alpha if settings else 0.05,
        correction=settings.correction if settings else "holm",
        min_effect=settings.min_effect if settings else 0.0,
    )


def _baseline_for(
    store: HistoryStore, candidate: Run, baseline_runs: list[Run] | None
) -> tuple[Run | None, str]:
    if baseline_runs is not None:
        matching = [r for r in baseline_runs if r.series == candidate.series and r.id != candidate.id]
        return (matching[-1] if matching else None), "baseline logs"
    earlier = [
        r
        for r in store.runs(
            checkpoint=candidate.checkpoint,
            task=candidate.task,
            system=candidate.system,
            protocol=candidate.protocol,
        )
        if r.night < candidate.night
    ]
    return (earlier[-1] if earlier else None), "previous night"


def _latest_by_series(runs: list[Run]) -> dict[tuple[str, str, str, str], Run]:
    latest: dict[tuple[str, str, str, str], Run] = {}
    for run in runs:  # oldest first, so the last one wins
        latest[run.series] = run
    return latest


def _not_comparable_reason(candidate: Run, baseline: Run) -> str | None:
    if candidate.dataset_hash != baseline.dataset_hash:
        return f"dataset changed (hash {baseline.dataset_hash} → {candidate.dataset_hash})"
    if (candidate.judge, candidate.judge_model) != (baseline.judge, baseline.judge_model):
        return (
            f"judge changed ({baseline.judge} / {baseline.judge_model or 'no judge model'} → "
            f"{candidate.judge} / {candidate.judge_model or 'no judge model'})"
        )
    if candidate.tool_snapshot != baseline.tool_snapshot:
        return (
            f"tool responses differ ({baseline.tool_snapshot or 'live web'} → "
            f"{candidate.tool_snapshot or 'live web'}): a change may be the web moving, not the model"
        )
    if candidate.headline_score is None or candidate.headline_score != baseline.headline_score:
        return f"headline score differs ({baseline.headline_score} → {candidate.headline_score})"
    return None


def _flips(common: list[str], baseline_scores: dict, candidate_scores: dict) -> list[SampleFlip]:
    flips = [
        SampleFlip(
            i, baseline_scores[i][0], candidate_scores[i][0], baseline_scores[i][1], candidate_scores[i][1]
        )
        for i in common
        if candidate_scores[i][0] < baseline_scores[i][0]
    ]
    flips.sort(key=lambda f: (f.candidate_value - f.baseline_value, natural_key(f.sample_id)))
    return flips[:SHOWN_FLIPS]


def natural_key(sample_id: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key that orders the digit runs of a sample id by number: ``q5`` before ``q10``, ``2-9`` before ``2-10``."""
    parts = re.split(r"(\d+)", sample_id)  # digit runs at the odd positions
    return tuple((0, int(part), "") if i % 2 else (1, 0, part) for i, part in enumerate(parts))


def _seed(candidate: Run, baseline: Run) -> int:
    return int(hashlib.sha256(f"{candidate.log_hash}{baseline.log_hash}".encode()).hexdigest()[:8], 16)
