"""Leaderboard statistics: is the candidate significantly worse than the baseline on the same samples? And the
95% interval of one run's accuracy (Wilson score interval, which stays inside [0, 1] and is not empty at 0% or 100%).

- binary per-sample scores (0/1): exact one-sided McNemar test on the discordant pairs
  (b = baseline right & candidate wrong, c = the reverse; p = P[Binomial(b + c, 1/2) >= b]);
- other scores (partial credit, avg@k means): one-sided paired bootstrap of the mean difference
  (resampling the per-sample differences; p = share of centred resampled means at or below the observed one);
- the effect size is the mean paired difference (candidate − baseline) with a 95% CI (for McNemar the textbook Wald
  interval for the difference of paired proportions, Agresti, *Categorical Data Analysis*, 3rd ed., §11.1.1:
  ``Δ̂ ± z·√((b + c)/n − Δ̂²)/√n``; bootstrap percentiles for the bootstrap);
- multiple comparisons across a suite: Holm (family-wise error) or Benjamini–Hochberg (false discovery rate).

Why these tests. Conditional on the number of discordant pairs, the exact McNemar test is the uniformly most
powerful unbiased test of "candidate worse" for paired 0/1 scores; the concordant pairs carry no information, so
no other test on the same single-epoch data is materially more powerful (the mid-p variant gains 1–2 points of
power at the price of an inexact size). Holm keeps the chance that an A/A suite (no real change anywhere) raises
any regression at or below ``alpha``, whatever the noise. With one real drop among ``m`` comparisons, Holm and BH
both need its p-value below ``alpha / m``.

What power that buys (exact). Let ``d`` be the A/A discordance, the share of samples that two runs of the same model
(different seeds) score differently, and ``Δ`` the drop. Each sample is a pair (baseline, candidate): lost (1, 0)
with probability ``p_b = d/2 + Δ``, gained (0, 1) with ``p_c = d/2``, concordant otherwise, so the paired difference
has mean ``Δ`` and variance ``d + Δ − Δ²``. The exact one-sided McNemar test at level ``alpha/m`` (Holm's bar for one
drop among ``m`` comparisons) rejects when ``P[Binomial(b + c, 1/2) >= b] < alpha/m``; its power is the sum over the
discordant count ``D ~ Binomial(n, p_b + p_c)`` of ``P[b >= b_crit(D)]`` with ``b ~ Binomial(D, p_b / (p_b + p_c))``
(``mcnemar_power``, computed exactly with SciPy's binomial distribution).

For a 5-point drop on n = 500 paired samples, alpha = 0.05 and Holm over m = 6 comparisons: d = 3% → 94.8%,
d = 4.5% → 89.1%, d = 6% → 82.5%, d = 8% → 73.6%, d = 10% → 65.8%. Catching the drop in ≥ 90% of suites therefore
needs d ≲ 4% at m = 6 (``minimum_detectable_drop`` gives the drop caught with a chosen power for any n, d and m).
Noisier runs (sampling at temperature on hard items) need more samples or several epochs: avg@k scores divide the
per-sample variance of the paired difference by about k, and their comparison uses the paired bootstrap. Epochs
are clustered by sample everywhere: each sample's score is its mean over epochs before any test or interval, so
the unit of every interval is the sample (``mara_bench.leaderboards.collect``). These figures: ``docs/experiments/fidelity.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom, binomtest

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 10_000


@dataclass(frozen=True)
class PairedTest:
    """A one-sided test of "candidate < baseline" on ``n`` paired samples."""

    test: str
    n: int
    delta: float
    ci_low: float
    ci_high: float
    p_value: float


def paired_drop_test(baseline: np.ndarray, candidate: np.ndarray, seed: int = 0) -> PairedTest:
    """Test whether ``candidate`` (per-sample scores) is lower than ``baseline`` on the same samples."""
    baseline = np.asarray(baseline, dtype=float)
    candidate = np.asarray(candidate, dtype=float)
    if baseline.shape != candidate.shape or baseline.ndim != 1:
        raise ValueError(
            f"paired scores must be two 1-d arrays of equal length, got {baseline.shape} and {candidate.shape}"
        )
    if baseline.size == 0:
        raise ValueError("paired test needs at least one common sample")
    if _is_binary(baseline) and _is_binary(candidate):
        return mcnemar_drop(baseline, candidate)
    return bootstrap_drop(baseline, candidate, seed=seed)


def mcnemar_drop(baseline: np.ndarray, candidate: np.ndarray) -> PairedTest:
    """Exact one-sided McNemar test for 0/1 scores."""
    lost = int(np.sum((baseline == 1) & (candidate == 0)))
    gained = int(np.sum((baseline == 0) & (candidate == 1)))
    p_value = binomtest(lost, lost + gained, 0.5, alternative="greater").pvalue if lost + gained else 1.0
    differences = candidate - baseline
    delta, half_width = _wald(differences)
    return PairedTest("mcnemar", baseline.size, delta, delta - half_width, delta + half_width, float(p_value))


def bootstrap_drop(
    baseline: np.ndarray, candidate: np.ndarray, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> PairedTest:
    """One-sided paired bootstrap test of the mean difference, with a percentile 95% CI."""
    differences = candidate - baseline
    n = differences.size
    delta = float(differences.mean())
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = differences[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    # under H0 (no change) the resampled means centred on delta are the null distribution of the mean
    p_value = (1 + np.sum(means - delta <= delta)) / (resamples + 1)
    low, high = np.quantile(means, [0.025, 0.975])
    return PairedTest("paired bootstrap", n, delta, float(low), float(high), float(min(1.0, p_value)))


def adjust(p_values: list[float], method: str = "holm") -> list[float]:
    """Multiplicity-adjusted p-values (``holm`` or ``bh``), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, index in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p_values[index]))
            adjusted[index] = running
    elif method == "bh":
        running = 1.0
        for rank in range(m - 1, -1, -1):
            index = order[rank]
            running = min(running, m * p_values[index] / (rank + 1))
            adjusted[index] = min(1.0, running)
    else:
        raise ValueError(f"unknown multiple-comparison method {method!r}; use 'holm' or 'bh'")
    return adjusted


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``successes / n`` (95% by default).

    The interval always contains the proportion (exactly 1.0 as the upper bound of 30/30; rounding would otherwise
    leave it at 0.9999999999999999, below the point, which the trend plot rejects as a negative error bar)."""
    if n <= 0:
        raise ValueError(f"a proportion needs at least one trial, got n={n}")
    share = successes / n
    shrink = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / shrink
    half_width = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / shrink
    return max(0.0, min(share, centre - half_width)), min(1.0, max(share, centre + half_width))


def sample_mean_interval(per_sample: list[float], level: float = 0.95) -> tuple[float, float]:
    """The ``level`` CI of a mean score from each sample's score (its mean over epochs: the epochs of one sample
    are one cluster): Inspect's own ``ci`` metric (Student t with ``samples − 1`` degrees of freedom). On equal
    epochs per sample it equals Inspect's ``ci(cluster=...)`` over the epoch-level scores clustered by sample."""
    from inspect_ai.scorer import SampleScore, Score, ci

    scores = [SampleScore(score=Score(value=value), sample_id=i) for i, value in enumerate(per_sample)]
    interval = ci(level=level)(scores)
    return float(interval["lower"]), float(interval["upper"])  # type: ignore[index]


def _wald(differences: np.ndarray) -> tuple[float, float]:
    """(Δ̂, half width) of the Wald interval for paired proportions: the differences' maximum-likelihood variance
    ``(b + c)/n − Δ̂²`` (their ``ddof=0`` variance), the normal quantile."""
    n = differences.size
    delta = float(differences.mean())
    if n < 2:
        return delta, math.inf
    return delta, Z95 * float(differences.std(ddof=0)) / math.sqrt(n)


def _is_binary(values: np.ndarray) -> bool:
    return bool(np.all((values == 0) | (values == 1)))


@dataclass(frozen=True)
class JudgeAgreement:
    """How two judges' 0/1 verdicts on the same samples agree."""

    n: int
    agreement: float
    """Share of samples both judges scored the same."""
    kappa: float
    """Cohen's kappa: agreement beyond what the two judges' marginal rates give by chance (NaN when undefined)."""
    flips_up: int
    """Samples the first judge scored 0 and the second 1."""
    flips_down: int
    """Samples the first judge scored 1 and the second 0."""
    accuracy_first: float
    accuracy_second: float

    @property
    def flip_rate(self) -> float:
        return (self.flips_up + self.flips_down) / self.n


def judge_agreement(first: np.ndarray, second: np.ndarray) -> JudgeAgreement:
    """Agreement of two judges' 0/1 verdicts on the same samples (raw agreement, Cohen's kappa, flips).

    kappa = (p_o - p_e) / (1 - p_e), with p_e = p1·p2 + (1 - p1)(1 - p2) from each judge's rate of 1s; when both
    judges give one constant verdict p_e = 1 and kappa is undefined (NaN).
    """
    first = np.asarray(first, dtype=float)
    second = np.asarray(second, dtype=float)
    if first.shape != second.shape or first.ndim != 1 or first.size == 0:
        raise ValueError(
            f"judge agreement needs two equal, non-empty 1-d arrays, got {first.shape}, {second.shape}"
        )
    if not (_is_binary(first) and _is_binary(second)):
        raise ValueError("judge agreement needs 0/1 verdicts")
    observed = float(np.mean(first == second))
    rate_first, rate_second = float(first.mean()), float(second.mean())
    chance = rate_first * rate_second + (1 - rate_first) * (1 - rate_second)
    kappa = (observed - chance) / (1 - chance) if chance < 1 else math.nan
    return JudgeAgreement(
        n=first.size,
        agreement=observed,
        kappa=kappa,
        flips_up=int(np.sum((first == 0) & (second == 1))),
        flips_down=int(np.sum((first == 1) & (second == 0))),
        accuracy_first=rate_first,
        accuracy_second=rate_second,
    )


def mcnemar_power(n: int, discordance: float, drop: float, level: float) -> float:
    """The exact power of the one-sided exact McNemar test at ``level`` on ``n`` pairs, for a drop ``drop`` at A/A
    discordance ``discordance`` (module docstring: ``p_b = d/2 + Δ``, ``p_c = d/2``)."""
    lost, gained = discordance / 2 + drop, discordance / 2
    if lost + gained > 1 + 1e-12:
        raise ValueError(f"discordance {discordance} + drop {drop} exceeds 1")
    discordant = np.arange(n + 1)
    critical = _critical_losses(discordant, level)
    reject = binom.sf(critical - 1, discordant, lost / (lost + gained)) if lost + gained > 0 else 0.0
    return float(np.sum(binom.pmf(discordant, n, min(1.0, lost + gained)) * reject))


def _critical_losses(discordant: np.ndarray, level: float) -> np.ndarray:
    """Per discordant count D, the fewest losses b with ``P[Binomial(D, 1/2) >= b] < level`` (D + 1: none)."""
    critical = binom.isf(level, discordant, 0.5) + 1
    critical = np.where(binom.sf(critical - 1, discordant, 0.5) >= level, critical + 1, critical)
    return np.where(binom.sf(critical - 2, discordant, 0.5) < level, critical - 1, critical)


def minimum_detectable_drop(
    n: int, discordance: float, alpha: float, comparisons: int = 1, power: float = 0.8
) -> float:
    """The smallest drop (share of samples) that the exact McNemar test on ``n`` pairs, at Holm's bar
    ``alpha / comparisons`` for one drop, detects with at least ``power`` (``mcnemar_power``).

    Found by bisection on the drop, keeping the upper end at a drop whose exact power is at least ``power``, so the
    reported drop never has less (to 1e-6 of a share above the crossing); 1.0 when no possible drop reaches it. A
    discordance below one sample (two identical runs) is taken as one discordant sample, the least a real run shows.
    """
    if n < 1:
        raise ValueError(f"a detectable drop needs at least one sample, got n={n}")
    if not 0 <= discordance <= 1 or not 0 < alpha < 1 or not 0 < power < 1 or comparisons < 1:
        raise ValueError("discordance in [0, 1], alpha and power in (0, 1) and comparisons >= 1 are required")
    level = alpha / comparisons
    noise = max(discordance, 1 / n)
    low, high = 0.0, 1.0 - noise
    if mcnemar_power(n, noise, high, level) < power:
        return 1.0
    while high - low > 1e-6:
        middle = (low + high) / 2
        low, high = (low, middle) if mcnemar_power(n, noise, middle, level) >= power else (middle, high)
    return high
