"""Advantage estimators against hand-computed values: GRPO (std variants, Dr.GRPO, singleton, all-equal),
MATPO broadcast, GAE over masked gaps, whitening, and MARS balanced resampling."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from mara_bench.trainer.algorithms.advantages import broadcast, gae, grpo, resample_to, whiten

# Rows 0-3: question q, role solver, rewards 1 0 1 0 (mean 0.5, every deviation ±0.5).
# Rows 4-5: question q, role verifier, rewards 2 2 (all equal). Row 6: question r alone (a singleton).
REWARDS = [1.0, 0.0, 1.0, 0.0, 2.0, 2.0, 5.0]
KEYS = [("q", "solver")] * 4 + [("q", "verifier")] * 2 + [("r", "solver")]


def test_grpo_unbiased_std():
    # unbiased std of (1,0,1,0) = sqrt(4 * 0.25 / 3) = sqrt(1/3) = 0.577350; 0.5 / (0.577350 + 1e-6) = 0.866024
    expected = torch.tensor([0.866024, -0.866024, 0.866024, -0.866024, 0.0, 0.0, 0.0])
    assert_close(grpo(REWARDS, KEYS), expected, rtol=0, atol=2e-6)


def test_grpo_biased_std():
    # biased std of (1,0,1,0) = sqrt(4 * 0.25 / 4) = 0.5; 0.5 / (0.5 + 1e-6) = 0.999998
    expected = torch.tensor([0.999998, -0.999998, 0.999998, -0.999998, 0.0, 0.0, 0.0])
    assert_close(grpo(REWARDS, KEYS, unbiased=False), expected, rtol=0, atol=2e-6)


def test_dr_grpo_only_centres():
    # normalize_std=False: r - mean, no division: ±0.5, and still 0 for all-equal and singleton groups
    expected = torch.tensor([0.5, -0.5, 0.5, -0.5, 0.0, 0.0, 0.0])
    assert_close(grpo(REWARDS, KEYS, normalize_std=False), expected)


def test_grpo_eps_is_used():
    # std of (3, 1) unbiased = sqrt(2) = 1.414214; with eps 0.1: 1 / 1.514214 = 0.660409
    assert_close(
        grpo([3.0, 1.0], ["g", "g"], eps=0.1), torch.tensor([0.660409, -0.660409]), rtol=0, atol=1e-6
    )


def test_grpo_singleton_groups_get_zero_in_every_variant():
    for options in ({}, {"unbiased": False}, {"normalize_std": False}):
        assert_close(grpo([7.0, -3.0], ["a", "b"], **options), torch.zeros(2))


def test_grpo_role_in_the_key_separates_groups():
    # Same rewards, one key per question only: group (1,0,1,0,2,2) has mean 1, unbiased std sqrt(4/5) = 0.894427
    merged = grpo(REWARDS[:6], ["q"] * 6)
    assert_close(merged[:2], torch.tensor([0.0, -1.118033]), rtol=0, atol=2e-6)
    assert not torch.allclose(merged[:4], grpo(REWARDS, KEYS)[:4])


def test_grpo_rejects_bad_input():
    with pytest.raises(ValueError, match="rows \\[1\\]"):
        grpo([1.0, float("nan")], ["g", "g"])
    with pytest.raises(ValueError, match="2 rewards but 3 group keys"):
        grpo([1.0, 0.0], ["g", "g", "g"])


def test_broadcast_uses_each_childs_own_mask():
    parents = torch.tensor([0.5, -2.0])
    masks = torch.tensor([[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 1, 1]])
    expected = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, -2.0, -2.0, 0.0], [0.5, 0.0, 0.5, 0.5]])
    assert_close(broadcast(parents, [0, 1, 0], masks), expected)


def test_broadcast_rejects_per_token_parents_and_bad_index():
    with pytest.raises(ValueError, match="scalars per parent"):
        broadcast(torch.ones(2, 3), [0], torch.ones(1, 3))
    with pytest.raises(ValueError, match="lie in \\[0, 2\\)"):
        broadcast(torch.ones(2), [2], torch.ones(1, 3))


# GAE hand example: one row, tokens 2-3 masked (tool output) and holding junk values 9.
# The unmasked subsequence is t = 0, 1, 4 with rewards (0, 0, 1) and values (0.5, 0.2, 0.4); gamma 0.9, lam 0.8.
#   t=4: delta = 1 + 0.9*0 - 0.4 = 0.6                  A = 0.6
#   t=1: delta = 0 + 0.9*0.4 - 0.2 = 0.16               A = 0.16 + 0.72*0.6 = 0.592
#   t=0: delta = 0 + 0.9*0.2 - 0.5 = -0.32              A = -0.32 + 0.72*0.592 = 0.10624
# returns = A + V = (0.60624, 0.792, -, -, 1.0)
GAE_REWARDS = torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0]])
GAE_VALUES = torch.tensor([[0.5, 0.2, 9.0, 9.0, 0.4]])
GAE_MASK = torch.tensor([[1, 1, 0, 0, 1]])


def test_gae_skips_masked_tokens():
    advantages, returns = gae(GAE_REWARDS, GAE_VALUES, GAE_MASK, gamma=0.9, lam=0.8, whiten=False)
    assert_close(advantages, torch.tensor([[0.10624, 0.592, 0.0, 0.0, 0.6]]))
    assert_close(returns, torch.tensor([[0.60624, 0.792, 0.0, 0.0, 1.0]]))


def test_gae_whitened():
    # mean of (0.10624, 0.592, 0.6) = 0.432747; unbiased var = 0.159943 / 2 = 0.079971; std 0.282792
    # (0.10624 - 0.432747) / 0.282792 = -1.154578 ; (0.592 - ...) = 0.563146 ; (0.6 - ...) = 0.591435
    advantages, returns = gae(GAE_REWARDS, GAE_VALUES, GAE_MASK, gamma=0.9, lam=0.8)
    assert_close(advantages, torch.tensor([[-1.154578, 0.563146, 0.0, 0.0, 0.591435]]), rtol=0, atol=2e-5)
    assert_close(returns, torch.tensor([[0.60624, 0.792, 0.0, 0.0, 1.0]]))  # returns are not whitened


def test_gae_with_gaps_equals_gae_on_the_compacted_rows():
    generator = torch.Generator().manual_seed(3)
    mask = torch.tensor([[1, 0, 0, 1, 1, 0, 1, 1], [0, 1, 1, 1, 0, 0, 0, 1], [1, 1, 1, 1, 1, 1, 1, 1]])
    rewards = torch.randn(3, 8, generator=generator) * mask
    values = torch.randn(3, 8, generator=generator)
    advantages, returns = gae(rewards, values, mask, gamma=0.95, lam=0.7, whiten=False)
    for row in range(3):
        keep = mask[row].bool()
        n = int(keep.sum())
        compact_a, compact_r = gae(
            rewards[row, keep].view(1, n),
            values[row, keep].view(1, n),
            torch.ones(1, n),
            gamma=0.95,
            lam=0.7,
            whiten=False,
        )
        assert_close(advantages[row, keep], compact_a[0])
        assert_close(returns[row, keep], compact_r[0])
        assert torch.all(advantages[row, ~keep] == 0)


def test_gae_rejects_rewards_on_masked_tokens():
    with pytest.raises(ValueError, match=r"\[\[0, 2\]\]"):
        gae(torch.tensor([[0.0, 0.0, 1.0]]), torch.zeros(1, 3), torch.tensor([[1, 1, 0]]), gamma=1.0, lam=1.0)


def test_whiten_uses_unbiased_variance_over_unmasked_entries():
    # (1, 2, 3) unmasked, 100 masked: mean 2, unbiased var (1 + 0 + 1) / 2 = 1 -> (-1, 0, 1); biased would be ±1.2247
    out = whiten(torch.tensor([1.0, 2.0, 3.0, 100.0]), torch.tensor([1, 1, 1, 0]))
    assert_close(out, torch.tensor([-1.0, 0.0, 1.0, 0.0]), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        whiten(torch.tensor([1.0, 2.0]), torch.tensor([1, 0]))


def test_resample_down_draws_a_subset_without_replacement():
    chosen = resample_to([10, 11, 12, 13, 14, 15, 16], 4, torch.Generator().manual_seed(0))
    assert chosen.numel() == 4 and chosen.unique().numel() == 4
    assert set(chosen.tolist()) <= set(range(10, 17))


def test_resample_up_duplicates_evenly():
    # 3 indices to 8: every index twice (8 // 3) plus 2 distinct ones a third time
    chosen = resample_to([10, 11, 12], 8, torch.Generator().manual_seed(0))
    counts = sorted(torch.bincount(chosen - 10).tolist())
    assert counts == [2, 3, 3]


def test_resample_is_reproducible_and_exact_when_sizes_match():
    first = resample_to(list(range(9)), 4, torch.Generator().manual_seed(5))
    again = resample_to(list(range(9)), 4, torch.Generator().manual_seed(5))
    assert torch.equal(first, again)
    assert resample_to([4, 2, 7], 3).tolist() == [4, 2, 7]
    with pytest.raises(ValueError, match="empty"):
        resample_to([], 2)


def _gae_rows(**algorithm):
    """Two rows of the gae estimator, both rewarded 0 (an all-equal step), with critic values 0.1 and 0.6."""
    from mara_bench.core.samples import Sample
    from mara_bench.trainer.algorithms.estimators import AdvantageBatch, advantage_estimator
    from mara_bench.trainer.config import AlgorithmConfig

    rows = [Sample(prompt_ids=[1], response_ids=[5, 6], loss_mask=[1, 1], reward=0.0) for _ in range(2)]
    batch = AdvantageBatch(
        samples=rows,
        masks=[torch.ones(2), torch.ones(2)],
        values=[torch.tensor([0.1, 0.1]), torch.tensor([0.6, 0.6])],
        algo=AlgorithmConfig(method="mask", advantage="gae", gamma=1.0, lam=1.0, **algorithm),
        method_assigned=False,
    )
    return advantage_estimator("gae").estimate(batch).advantages


def test_the_gae_estimator_whitens_unless_the_recipe_keeps_the_raw_advantages():
    whitened = _gae_rows()  # raw (-0.1, -0.1, -0.6, -0.6): mean -0.35 -> +-0.25 / std 0.2887
    assert_close(
        torch.cat(whitened), torch.tensor([0.866025, 0.866025, -0.866025, -0.866025]), rtol=0, atol=2e-5
    )
    raw = _gae_rows(
        gae_whiten=False
    )  # R - V: a step whose rewards are all 0 pushes each row by its critic error
    assert_close(torch.cat(raw), torch.tensor([-0.1, -0.1, -0.6, -0.6]))


def test_raw_gae_advantages_need_the_gae_estimator():
    from mara_bench.trainer.config import ConfigError, TrainConfig, from_dict

    with pytest.raises(ConfigError, match="algorithm.gae_whiten: applies to advantage 'gae' only"):
        from_dict(TrainConfig, {"algorithm": {"advantage": "grpo", "gae_whiten": False}})
