"""The metrics of a log's leaderboard row: every metric of its scores, a 95% CI on the mean ones and the headline
(``log_metrics``), and what grading cost per attempt (``judge_metrics``, stored as the ``judge`` score)."""

from __future__ import annotations

import math
from collections import defaultdict

from inspect_ai.log import EvalLog
from inspect_ai.model import ModelUsage

from mara_bench.harness.accounting import Price, default_prices, price_of
from mara_bench.judges.grader import GRADER_ROLE, SECOND_GRADER_ROLE
from mara_bench.leaderboards.records import MetricValue, SampleScore
from mara_bench.leaderboards.stats import Z95, sample_mean_interval, wilson_interval

MEAN_METRICS = frozenset({"accuracy", "mean"})
"""Metrics that are the mean sample score, so they get a 95% CI over the samples (each sample's score its mean over
epochs, so epochs are clustered by sample): Wilson for 0/1 scores, else Inspect's ``ci`` (Student t), and from
the log's ``stderr`` metric only when no sample score was read."""

JUDGE_SCORE = "judge"
"""The stored score name of what grading cost (``judge_metrics``)."""
GRADER_ROLES = (GRADER_ROLE, SECOND_GRADER_ROLE)


def log_metrics(
    log: EvalLog, samples: list[SampleScore], headline: tuple[str | None, str | None]
) -> list[MetricValue]:
    """Every metric of the log; the mean metrics and the headline get a 95% CI."""
    by_score: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        by_score[sample.score].append(sample.value)
    metrics = []
    for score in log.results.scores if log.results else []:
        stderr_metric = score.metrics.get("stderr")
        stderr = stderr_metric.value if stderr_metric else _stderr(by_score.get(score.name, []))
        for name, metric in score.metrics.items():
            value = float(metric.value)
            if math.isnan(value):  # undefined (a cost without a price): left blank, never stored as a number
                continue
            if name in MEAN_METRICS or (score.name, name) == headline:
                low, high = _mean_interval(value, stderr, by_score.get(score.name, []))
                metrics.append(MetricValue(score.name, name, value, stderr, low, high))
            else:
                metrics.append(MetricValue(score.name, name, value))
    return metrics


def judge_metrics(log: EvalLog, attempts: int) -> list[MetricValue]:
    """What grading cost per attempt, apart from the agent's own ``accounting``: the graders' tokens (roles
    ``grader`` and ``grader2`` together, from Inspect's per-role usage) and dollars where every grader has a price."""
    usage = (log.stats.role_usage if log.stats else None) or {}
    graded = [(role, usage[role]) for role in GRADER_ROLES if role in usage]
    if not graded or attempts == 0:
        return []
    roles = log.eval.model_roles or {}
    prices = default_prices()
    tokens_in = sum(u.input_tokens for _, u in graded)
    tokens_out = sum(u.output_tokens for _, u in graded)
    metrics = [
        MetricValue(JUDGE_SCORE, "input_tokens", tokens_in / attempts),
        MetricValue(JUDGE_SCORE, "output_tokens", tokens_out / attempts),
    ]
    costs = [_usage_cost(_role_model(roles.get(role)), used, prices) for role, used in graded]
    if all(cost is not None for cost in costs):
        metrics.append(MetricValue(JUDGE_SCORE, "cost_usd", sum(costs) / attempts))
    return metrics


def _role_model(config: object) -> str | None:
    configs = config if isinstance(config, list) else [config]
    return configs[0].model if configs and configs[0] is not None else None


def _usage_cost(model: str | None, usage: ModelUsage, prices: dict[str, Price]) -> float | None:
    price = price_of(model, prices)
    if price is None:
        return None
    return (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1_000_000


def _mean_interval(
    value: float, stderr: float | None, samples: list[float]
) -> tuple[float | None, float | None]:
    """95% CI of a mean score (``MEAN_METRICS``): Wilson for 0/1 sample scores, Inspect's ``ci`` over two or more
    sample scores, else ``value ± 1.96 stderr`` (None without one)."""
    if samples and all(v in (0.0, 1.0) for v in samples):
        return wilson_interval(sum(samples), len(samples))
    if len(samples) >= 2:
        return sample_mean_interval(samples)
    if stderr is None or math.isnan(stderr):
        return None, None
    return value - Z95 * stderr, value + Z95 * stderr


def _stderr(values: list[float]) -> float | None:
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
