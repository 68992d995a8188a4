"""Paired regression statistics: hand-computed cases, then calibration and power on simulated suites."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from leaderboards.stats import (
    adjust,
    bootstrap_drop,
    judge_agreement,
    mcnemar_drop,
    minimum_detectable_drop,
    paired_drop_test,
    wilson_interval,
)


def test_mcnemar_counts_only_discordant_pairs():
    baseline = np.array([1, 1, 1, 1, 0, 0])
    candidate = np.array([0, 0, 0, 1, 1, 0])
    result = paired_drop_test(baseline, candidate)
    # lost 3, gained 1: p = P[Binomial(4, 1/2) >= 3] = (4 + 1) / 16
    assert result.test == "mcnemar"
    assert result.p_value == pytest.approx(5 / 16)
    assert result.delta == pytest.approx(-2 / 6)
    assert result.ci_low < result.delta < result.ci_high


def test_mcnemar_without_discordant_pairs_is_not_significant():
    same = np.array([1, 0, 1, 1])
    assert mcnemar_drop(same, same).p_value == 1.0


def test_bootstrap_on_partial_credit():
    baseline = np.full(50, 0.5)
    candidate = np.full(50, 0.25)
    result = paired_drop_test(baseline, candidate, seed=3)
    # every resampled mean difference is -0.25, none of the centred ones reaches -0.25: p = 1 / (B + 1)
    assert result.test == "paired bootstrap"
    assert result.p_value == pytest.approx(1 / 10_001)
    assert (result.delta, result.ci_low, result.ci_high) == pytest.approx((-0.25, -0.25, -0.25))
    assert bootstrap_drop(baseline, baseline).p_value == 1.0


def test_paired_test_rejects_unpaired_input():
    with pytest.raises(ValueError, match="equal length"):
        paired_drop_test(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="at least one common sample"):
        paired_drop_test(np.ones(0), np.ones(0))


def test_wilson_interval_by_hand():
    # 0 of 10: [0, z² / (10 + z²)]; 5 of 10: 0.5 ± z sqrt(0.025 + z²/400) / (1 + z²/10)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert wilson_interval(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    with pytest.raises(ValueError, match="at least one trial"):
        wilson_interval(0, 0)


def test_holm_and_benjamini_hochberg_by_hand():
    p_values = [0.01, 0.04, 0.03]
    assert adjust(p_values, "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert adjust(p_values, "bh") == pytest.approx([0.03, 0.04, 0.04])
    with pytest.raises(ValueError, match="holm"):
        adjust(p_values, "bonferroni")


# Simulated nightly suites, and the noise model the guarantee holds for. A suite has 6 comparisons (e.g. 3 tasks x 2
# checkpoints) of 500 paired 0/1 samples. Each item has a solve probability p ~ Beta(a, a); two runs of one model
# (different seeds) each solve it with probability p, so they disagree on a share d = 2 E[p(1 - p)] = 2a / (2(2a + 1))
# of the items: the A/A discordance. The guarantee tests use d = 4.5% (a = 0.05), typical of low-temperature decoding.
# A/A: both runs draw from the same probabilities. Drop: in comparison 0, 25 of the candidate's correct items (5
# points of 500) are turned wrong. The stats module's docstring derives the power for any d; at d = 8% a 5-point drop
# on 500 samples is caught only ~80% of the time under Holm over 6, which the last simulation checks, not hides.
SUITES, COMPARISONS, SAMPLES, DROPPED = 1000, 6, 500, 25
GUARANTEED_DISCORDANCE = 0.045


def _simulated_suite(rng: np.random.Generator, discordance: float, inject_drop: bool) -> list[bool]:
    """Which of the suite's comparisons Holm flags as regressions (comparison 0 carries the drop, if any)."""
    a = discordance / (1 - 2 * discordance)
    p_values = []
    for index in range(COMPARISONS):
        solve = rng.beta(a, a, size=SAMPLES)
        baseline = (rng.random(SAMPLES) < solve).astype(float)
        candidate = (rng.random(SAMPLES) < solve).astype(float)
        if inject_drop and index == 0:
            candidate[rng.choice(np.flatnonzero(candidate == 1), size=DROPPED, replace=False)] = 0.0
        p_values.append(paired_drop_test(baseline, candidate).p_value)
    return [p < 0.05 for p in adjust(p_values, "holm")]


def _caught_share(discordance: float, suites: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return sum(_simulated_suite(rng, discordance, inject_drop=True)[0] for _ in range(suites)) / suites


def _documented_power(discordance: float) -> float:
    """The normal approximation of leaderboards.stats' docstring: Φ((k − z·√(n·d + k)) / √(n·d))."""
    z = norm.ppf(1 - 0.05 / COMPARISONS)
    noise = SAMPLES * discordance
    return float(norm.cdf((DROPPED - z * math.sqrt(noise + DROPPED)) / math.sqrt(noise)))


def test_simulated_discordance_is_the_documented_one():
    rng = np.random.default_rng(1)
    a = GUARANTEED_DISCORDANCE / (1 - 2 * GUARANTEED_DISCORDANCE)
    solve = rng.beta(a, a, size=200_000)
    disagree = (rng.random(solve.size) < solve) != (rng.random(solve.size) < solve)
    assert disagree.mean() == pytest.approx(GUARANTEED_DISCORDANCE, abs=0.002)


@pytest.mark.parametrize("discordance", [GUARANTEED_DISCORDANCE, 0.08])
def test_aa_suites_raise_no_regression_in_at_least_95_percent(discordance):
    # Holm bounds the family-wise error at alpha for any noise level
    rng = np.random.default_rng(20260101)
    clean = sum(not any(_simulated_suite(rng, discordance, inject_drop=False)) for _ in range(SUITES))
    assert clean >= 0.95 * SUITES, clean


def test_an_injected_five_point_drop_is_caught_in_at_least_90_percent():
    caught = _caught_share(GUARANTEED_DISCORDANCE, SUITES, seed=20260102)
    assert caught >= 0.90, caught


@pytest.mark.parametrize(("discordance", "documented"), [(0.03, 0.995), (0.06, 0.907), (0.08, 0.816)])
def test_power_follows_the_documented_arithmetic(discordance, documented):
    assert _documented_power(discordance) == pytest.approx(documented, abs=0.001)
    # the exact test is a little conservative: simulated power sits 0-4 points under the approximation
    simulated = _caught_share(discordance, 400, seed=int(discordance * 1000))
    assert documented - 0.04 <= simulated <= documented + 0.01, simulated


def test_bootstrap_calibration_and_power_on_avg_at_4_scores():
    # The remedy for noisier runs: 4 epochs at a per-epoch discordance of 8.3% (Beta(0.1, 0.1)). avg@4 scores are in
    # {0, .25, .5, .75, 1}; the drop lowers 25 items' candidate score by a full point (5 points). Caught means
    # p < alpha / 6, which is enough for Holm over 6 comparisons to flag it.
    rng = np.random.default_rng(7)
    false_alarms = caught = 0
    trials = 60
    for trial in range(trials):
        solve = rng.beta(0.1, 0.1, size=SAMPLES)
        baseline = rng.binomial(4, solve) / 4
        candidate = rng.binomial(4, solve) / 4
        false_alarms += bootstrap_drop(baseline, candidate, seed=trial, resamples=1000).p_value < 0.05
        dropped = candidate.copy()
        dropped[rng.choice(np.flatnonzero(dropped == 1), size=DROPPED, replace=False)] = 0.0
        caught += bootstrap_drop(baseline, dropped, seed=trial, resamples=1000).p_value < 0.05 / COMPARISONS
    assert false_alarms <= 0.1 * trials, false_alarms
    assert caught >= 0.9 * trials, caught


@pytest.mark.parametrize("n", [1, 7, 30, 40, 99, 300])
def test_wilson_interval_always_contains_the_proportion(n):
    for successes in (0, n // 3, n):
        low, high = wilson_interval(successes, n)
        assert low <= successes / n <= high


def test_judge_agreement_equals_a_hand_count():
    first = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 0])
    second = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1, 0])
    agreement = judge_agreement(first, second)
    # 7 of 10 agree; each judge says 1 on 5 and 6 of 10: chance = .5*.6 + .5*.4 = .5, kappa = (.7 - .5) / .5 = .4
    assert (agreement.n, agreement.flips_down, agreement.flips_up) == (10, 1, 2)
    assert agreement.agreement == pytest.approx(0.7)
    assert agreement.kappa == pytest.approx(0.4)
    assert agreement.flip_rate == pytest.approx(0.3)
    assert (agreement.accuracy_first, agreement.accuracy_second) == (0.5, 0.6)


def test_judge_agreement_of_two_constant_judges_has_no_kappa():
    assert math.isnan(judge_agreement(np.ones(4), np.ones(4)).kappa)


def test_minimum_detectable_drop_equals_a_hand_computation():
    # n = 500, discordance 8%, alpha 0.05 over 6 comparisons: z = 2.3940, z_0.8 = 0.8416, s = sqrt(40) = 6.3246;
    # k^2 - (2*0.8416*6.3246 + 2.3940^2) k + (0.8416^2 - 2.3940^2) * 40 = 0  ->  k = 24.56 samples, 4.91 points
    drop = minimum_detectable_drop(500, 0.08, 0.05, comparisons=6)
    assert drop == pytest.approx(24.56 / 500, abs=2e-4)
    # the module's power formula at that drop gives the 80% asked for
    k, s = drop * 500, math.sqrt(500 * 0.08)
    assert norm.cdf((k - norm.ppf(1 - 0.05 / 6) * math.sqrt(s * s + k)) / s) == pytest.approx(0.8)


def test_more_samples_detect_smaller_drops():
    drops = [minimum_detectable_drop(n, 0.1, 0.05) for n in (100, 400, 1600)]
    assert drops[0] > drops[1] > drops[2]
