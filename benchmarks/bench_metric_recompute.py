"""Inspect's once-a-second metric recompute on a long eval: a harness task's scores vs a plain task's.

While an eval runs, Inspect recomputes every metric over all the samples finished so far about once a second
(``eval_results``, the same call that makes the final results). This bench builds 5,000 finished samples as a
harness task leaves them (the math judge's dict score and the ``accounting`` score the system solver writes, with
the counts of a one-role, two-tool system and the tool cache) and as a plain task leaves them (``match()``), and
times one recompute at 5,000 samples after one at 4,990 (the previous second's), in ``ROUNDS`` interleaved pairs
(``_pairs.py``), CPU time. Reported: the harness/plain ratio and the accounting score's share (the same recompute
over the accounting score alone), min/median/max; never asserted.

The bench imports nothing that moved between versions (the accounting scorer is found by its registered name), so
the same file times an older checkout: ``PYTHONPATH=<checkout> .venv/bin/pytest benchmarks/bench_metric_recompute.py
--benchmark-only -s``.
"""

from __future__ import annotations

import gc
import json
import math
import random
import time
from collections.abc import Callable

from _pairs import interleaved_pairs, ratio_spread
from inspect_ai._eval.task.results import eval_results
from inspect_ai.scorer import SampleScore, Score, match

import mara_bench.harness._registry  # noqa: F401  (registers the accounting scorer that the solver-written score names)
from mara_bench.judges.scorers import math_scorer

SAMPLES, PREVIOUS, ROUNDS = 5_000, 4_990, 7
ACCOUNT_KEYS = (
    "input_tokens",
    "output_tokens",
    "input_tokens_solver",
    "output_tokens_solver",
    "tool_calls",
    "tool_calls_search",
    "tool_calls_browse",
    "pages_read",
    "papers_read",
    "python_calls",
    "cost_usd",
    "tool_cache_hit",
    "tool_cache_miss",
    "tool_cache_record",
    "tool_cache_live",
)


def _harness_scores(rng: random.Random) -> list[dict[str, SampleScore]]:
    def account() -> dict[str, float]:
        return {key: math.nan if key == "cost_usd" else float(rng.randint(0, 500)) for key in ACCOUNT_KEYS}

    return [
        {
            "math": SampleScore(score=Score(value={"correct": 1.0, "judged_correct": 1.0}), sample_id=i),
            "accounting": SampleScore(score=Score(value=account()), sample_id=i),
        }
        for i in range(SAMPLES)
    ]


def _recompute(scores: list[dict[str, SampleScore]], scorers: list, names: list[str]) -> Callable[[], float]:
    """CPU seconds of the recompute at ``SAMPLES`` samples, after the one at ``PREVIOUS``."""

    def timed() -> float:
        gc.collect()
        eval_results(PREVIOUS, scores[:PREVIOUS], None, scorers, None, scorer_names=names)
        start = time.process_time()
        eval_results(SAMPLES, scores, None, scorers, None, scorer_names=names)
        return time.process_time() - start

    return timed


def test_metric_recompute_harness_vs_plain(benchmark):
    harness = _harness_scores(random.Random(0))
    accounting_only = [{"accounting": scores["accounting"]} for scores in harness]
    plain = [{"match": SampleScore(score=Score(value="C"), sample_id=i)} for i in range(SAMPLES)]
    ours = _recompute(harness, [math_scorer()], ["math"])
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(ours, _recompute(plain, [match()], ["match"]), ROUNDS),
        rounds=1,
        iterations=1,
    )
    accounting = _recompute(accounting_only, [], [])
    shares = [accounting() / ours() for _ in range(ROUNDS)]
    report = {
        "samples": SAMPLES,
        "harness_over_plain": ratio_spread(pairs, lambda p: p.ours / p.baseline).as_dict(),
        "harness_ms": sorted(round(1e3 * p.ours, 1) for p in pairs),
        "plain_ms": sorted(round(1e3 * p.baseline, 1) for p in pairs),
        "accounting_share": {"min": min(shares), "median": sorted(shares)[ROUNDS // 2], "max": max(shares)},
    }
    benchmark.extra_info.update(report)
    print(f"\nmetric recompute at {SAMPLES} samples: {json.dumps(report)}")
