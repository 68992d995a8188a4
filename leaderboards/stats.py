"""Leaderboard statistics: is the candidate significantly worse than the baseline on the same samples? And the
95% interval of one run's accuracy (Wilson score interval, which stays inside [0, 1] and is not empty at 0% or 100%).

- binary per-sample scores (0/1): exact one-sided McNemar test on the discordant pairs
  (b = baseline right & candidate wrong, c = the reverse; p = P[Binomial(b + c, 1/2) >= b]);
- other scores (partial credit, avg@k means): one-sided paired bootstrap of the mean difference
  (resampling the per-sample differences; p = share of centred resampled means at or below the observed one);
- the effect size is the mean paired difference (candidate − baseline) with a 95% CI
  (Wald on paired differences for McNemar, bootstrap percentiles for the bootstrap);
- multiple comparisons across a suite: Holm (family-wise error) or Benjamini–Hochberg (false discovery rate).

Why these tests. Conditional on the number of discordant pairs, the exact McNemar test is the uniformly most
powerful unbiased test of "candidate worse" for paired 0/1 scores; the concordant pairs carry no information, so
no other test on the same single-epoch data is materially more powerful (the mid-p variant gains 1–2 points of
power at the price of an inexact size). Holm keeps the chance that an A/A suite (no real change anywhere) raises
any regression at or below ``alpha``, whatever the noise. With one real drop among ``m`` comparisons, Holm and BH
both need its p-value below ``alpha / m``.

What power that buys (one-sided, normal approximation). Let ``d`` be the A/A discordance, the share of samples
that two runs of the same model (different seeds) score differently, and ``k = n·Δ`` the samples a drop of ``Δ``
loses. The drop adds ``k`` discordant pairs, so ``D ≈ n·d + k`` and ``b − c = k + (b₀ − c₀)``, where the A/A
imbalance ``b₀ − c₀`` has mean 0 and variance ``n·d``. The test rejects when ``b − c > z·√D`` with
``z = Φ⁻¹(1 − alpha/m)``, so

    power ≈ Φ((k − z·√(n·d + k)) / √(n·d)).

For a 5-point drop on n = 500 paired samples (k = 25), alpha = 0.05 and Holm over m = 6 comparisons (z = 2.39):
d = 3% → 99%, d = 4.5% → 96%, d = 6% → 91%, d = 8% → 82%, d = 10% → 73% (the exact test is conservative:
simulated power is 1–3 points lower). Catching the drop in ≥ 90% of suites therefore needs d ≲ 6% at m = 6
(d ≲ 12% for a single comparison, ≲ 4% at m = 20, ≲ 3% at m = 50). Noisier runs (sampling at temperature on hard
items) need more samples (at d = 8%, m = 6: n ≈ 600 for 90% by the formula) or several epochs: avg@k scores divide the
per-sample variance of the paired difference by about k, and their comparison uses the paired bootstrap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, norm

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


def _wald(differences: np.ndarray) -> tuple[float, float]:
    n = differences.size
    delta = float(differences.mean())
    if n < 2:
        return delta, math.inf
    return delta, Z95 * float(differences.std(ddof=1)) / math.sqrt(n)


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


def minimum_detectable_drop(
    n: int, discordance: float, alpha: float, comparisons: int = 1, power: float = 0.8
) -> float:
    """The smallest drop (share of samples) a paired test on ``n`` samples detects with ``power``.

    From the module's power formula: a drop losing ``k = n·Δ`` samples is detected with probability
    ``Φ((k − z·√(n·d + k)) / √(n·d))`` where ``z = Φ⁻¹(1 − alpha/m)`` (Holm's bar for one drop among ``m``
    comparisons) and ``d`` the A/A discordance; setting that to ``power`` (``z_β = Φ⁻¹(power)``) and solving for k
    gives the larger root of ``k² − (2·z_β·s + z²)·k + (z_β² − z²)·s² = 0`` with ``s = √(n·d)``. A discordance of 0
    (two identical runs) is taken as one discordant sample, the least a real run shows.
    """
    if n < 1:
        raise ValueError(f"a detectable drop needs at least one sample, got n={n}")
    if not 0 <= discordance <= 1 or not 0 < alpha < 1 or not 0 < power < 1 or comparisons < 1:
        raise ValueError("discordance in [0, 1], alpha and power in (0, 1) and comparisons >= 1 are required")
    z = float(norm.ppf(1 - alpha / comparisons))
    z_power = float(norm.ppf(power))
    s = math.sqrt(max(n * discordance, 1.0))
    b = 2 * z_power * s + z * z
    k = (b + math.sqrt(b * b - 4 * (z_power * z_power - z * z) * s * s)) / 2
    return min(1.0, k / n)
