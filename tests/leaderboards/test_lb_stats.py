"""Paired regression statistics: hand-computed cases, then calibration and power on simulated suites."""

from __future__ import annotations

import numpy as np
import pytest

from leaderboards.stats import adjust, bootstrap_drop, mcnemar_drop, paired_drop_test


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


def test_holm_and_benjamini_hochberg_by_hand():
    p_values = [0.01, 0.04, 0.03]
    assert adjust(p_values, "holm") == pytest.approx([0.03, 0.06, 0.06])
    assert adjust(p_values, "bh") == pytest.approx([0.03, 0.04, 0.04])
    with pytest.raises(ValueError, match="holm"):
        adjust(p_values, "bonferroni")


# Simulated nightly suites: 6 comparisons of 500 paired samples each (e.g. 3 tasks x 2 checkpoints). Each item has a
# solve probability drawn from Beta(0.05, 0.05), so two seeds of one model disagree on about 4.5% of the items
# (2 E[p(1-p)]), typical of low-temperature decoding. A/A: both runs draw from the same probabilities. Drop: in one
# comparison, 25 of the candidate's correct items (5 points of 500) are turned wrong.
SUITES, COMPARISONS, SAMPLES = 1000, 6, 500


def _simulated_suite(rng: np.random.Generator, inject_drop: bool) -> list[bool]:
    p_values = []
    for index in range(COMPARISONS):
        solve = rng.beta(0.05, 0.05, size=SAMPLES)
        baseline = (rng.random(SAMPLES) < solve).astype(float)
        candidate = (rng.random(SAMPLES) < solve).astype(float)
        if inject_drop and index == 0:
            candidate[rng.choice(np.flatnonzero(candidate == 1), size=SAMPLES // 20, replace=False)] = 0.0
        p_values.append(paired_drop_test(baseline, candidate).p_value)
    return [p < 0.05 for p in adjust(p_values, "holm")]


def test_aa_suites_raise_no_regression_in_at_least_95_percent():
    rng = np.random.default_rng(20260101)
    clean = sum(not any(_simulated_suite(rng, inject_drop=False)) for _ in range(SUITES))
    assert clean >= 0.95 * SUITES, clean


def test_an_injected_five_point_drop_is_caught_in_at_least_90_percent():
    rng = np.random.default_rng(20260102)
    caught = sum(_simulated_suite(rng, inject_drop=True)[0] for _ in range(SUITES))
    assert caught >= 0.90 * SUITES, caught


def test_bootstrap_calibration_and_power_on_avg_at_4_scores():
    # avg@4: per-sample scores in {0, .25, .5, .75, 1}; the drop lowers 25 items' candidate score by a full point
    rng = np.random.default_rng(7)
    false_alarms = caught = 0
    trials = 60
    for trial in range(trials):
        solve = rng.beta(0.1, 0.1, size=SAMPLES)
        baseline = rng.binomial(4, solve) / 4
        candidate = rng.binomial(4, solve) / 4
        false_alarms += bootstrap_drop(baseline, candidate, seed=trial, resamples=1000).p_value < 0.05
        dropped = candidate.copy()
        dropped[rng.choice(np.flatnonzero(dropped == 1), size=SAMPLES // 20, replace=False)] = 0.0
        caught += bootstrap_drop(baseline, dropped, seed=trial, resamples=1000).p_value < 0.05
    assert false_alarms <= 0.1 * trials, false_alarms
    assert caught >= 0.9 * trials, caught
