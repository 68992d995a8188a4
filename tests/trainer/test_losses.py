"""Losses against hand-computed values: clipped surrogate (both clip branches, dual clip, separate ranges) with
gradients and stats, every KL kind with its gradient (straight-through included), entropy, aggregation modes."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from mara_bench.trainer.algorithms.losses import (
    AGGREGATIONS,
    KL_ESTIMATORS,
    aggregate,
    entropy,
    get_policy_loss,
    kl,
    loss_counts,
    policy_loss,
)

# Two rows with the same four ratios 0.5, 1.1, 1.5, 4.0 (old logprob 0, new logprob log r);
# row 0 has advantage +1, row 1 has advantage -1. With clip 0.2 and dual clip 3, per-token losses:
#   A=+1: max(-r, -clip(r, 0.8, 1.2)) = -0.5, -1.1, -1.2 (clipped high), -1.2 (clipped high)
#   A=-1: max(r, clip(r, 0.8, 1.2))   =  0.8 (clipped low), 1.1, 1.5, 4.0 -> min(4.0, 3.0) = 3.0 (dual clip)
# token-mean = (-0.5 - 1.1 - 1.2 - 1.2 + 0.8 + 1.1 + 1.5 + 3.0) / 8 = 2.4 / 8 = 0.3
RATIOS = torch.tensor([0.5, 1.1, 1.5, 4.0]).repeat(2, 1)
ADVANTAGES = torch.tensor([1.0, -1.0])
MASK = torch.ones(2, 4)


def run_policy_loss(advantages=ADVANTAGES, **options):
    logprob = RATIOS.log().requires_grad_(True)
    loss, stats = policy_loss(torch.zeros(2, 4), logprob, advantages, MASK, **options)
    loss.backward()
    return loss.detach(), logprob.grad, stats


def test_clipped_surrogate_value_and_gradient():
    loss, grad, _ = run_policy_loss()
    assert_close(loss, torch.tensor(0.3))
    # d loss / d logprob = -A * r / 8 where the unclipped branch is active, 0 where a clip holds
    assert_close(grad, torch.tensor([[-0.5, -1.1, 0.0, 0.0], [0.0, 1.1, 1.5, 0.0]]) / 8)


def test_per_token_advantages_match_row_scalars():
    per_token = ADVANTAGES.unsqueeze(-1).expand(2, 4)
    assert_close(run_policy_loss(per_token)[:2], run_policy_loss()[:2])


def test_dual_clip_disabled():
    # without the dual clip the A=-1, r=4 token keeps loss 4.0 and gradient 4.0: (2.4 + 1.0) / 8 = 0.425
    loss, grad, stats = run_policy_loss(dual_clip=None)
    assert_close(loss, torch.tensor(0.425))
    assert_close(grad[1, 3], torch.tensor(4.0 / 8))
    assert stats["dual_clip_frac"] == 0


def test_separate_low_and_high_clip():
    # clip_high 0.28 (DAPO's clip-higher): A=+1 tokens r=1.5, 4.0 now give -1.28; the rest is unchanged
    # (-0.5 - 1.1 - 1.28 - 1.28 + 6.4) / 8 = 2.24 / 8 = 0.28
    loss, _, _ = run_policy_loss(clip_high=0.28)
    assert_close(loss, torch.tensor(0.28))
    # clip_low 0.6: the A=-1, r=0.5 token is no longer clipped (0.5 > 0.4): 0.8 -> 0.5, gradient 0.5/8
    loss, grad, _ = run_policy_loss(clip_low=0.6)
    assert_close(loss, torch.tensor((2.4 - 0.3) / 8))
    assert_close(grad[1, 0], torch.tensor(0.5 / 8))


def test_policy_loss_stats():
    _, _, stats = run_policy_loss()
    # high clip: A>0 and r>1.2 -> 2 of 8; low clip: A<0 and r<0.8 -> 1 of 8; dual clip: A<0 and r>3 -> 1 of 8
    assert_close(stats["clip_frac_high"], torch.tensor(0.25))
    assert_close(stats["clip_frac_low"], torch.tensor(0.125))
    assert_close(stats["dual_clip_frac"], torch.tensor(0.125))
    assert_close(stats["ratio_mean"], torch.tensor(2 * 7.1 / 8))
    # k3 of old||new per ratio: r - 1 - ln r = 0.193147, 0.004690, 0.094535, 1.613706 (sum 1.906078), twice / 8
    assert_close(stats["approx_kl"], torch.tensor(2 * 1.906078 / 8), rtol=0, atol=1e-6)


def test_policy_loss_stats_add_up_with_global_tokens():
    _, _, stats = run_policy_loss(global_tokens=16)
    assert_close(stats["clip_frac_high"], torch.tensor(2 / 16))


def test_policy_loss_masks_and_validates():
    # masking out the dual-clipped token: (2.4 - 3.0) / 7
    logprob = RATIOS.log()
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    loss, _ = policy_loss(torch.zeros(2, 4), logprob, ADVANTAGES, mask)
    assert_close(loss, torch.tensor(-0.6 / 7))
    with pytest.raises(ValueError, match="dual_clip must be > 1"):
        policy_loss(torch.zeros(2, 4), logprob, ADVANTAGES, MASK, dual_clip=0.5)
    with pytest.raises(ValueError, match="advantages must be"):
        policy_loss(torch.zeros(2, 4), logprob, torch.ones(3), MASK)
    assert get_policy_loss("ppo") is policy_loss


# KL at logprob = log 0.5, ref = log 0.25: d = ln 2 = 0.693147.
#   k1 = d = 0.693147 (grad 1); abs = 0.693147 (grad sign d = 1); k2 = d^2/2 = 0.240227 (grad d = 0.693147)
#   k3 = e^-d + d - 1 = 0.5 + 0.693147 - 1 = 0.193147 (grad 1 - e^-d = 0.5)
#   k1+ / k3+: the value of k1 / k3, the gradient of k2 (0.693147)
LN2 = math.log(2)
KL_CASES = {
    "k1": (LN2, 1.0),
    "abs": (LN2, 1.0),
    "k2": (LN2**2 / 2, LN2),
    "k3": (LN2 - 0.5, 0.5),
    "k1+": (LN2, LN2),
    "k3+": (LN2 - 0.5, LN2),
}


@pytest.mark.parametrize("kind", sorted(KL_CASES))
def test_kl_value_and_gradient(kind):
    logprob = torch.tensor([math.log(0.5)], requires_grad=True)
    ref = torch.tensor([math.log(0.25)], requires_grad=True)
    value = kl(logprob, ref, kind)
    value.sum().backward()
    expected_value, expected_grad = KL_CASES[kind]
    assert_close(value, torch.tensor([expected_value]))
    assert_close(logprob.grad, torch.tensor([expected_grad]))
    assert ref.grad is None  # the reference is a constant


def test_kl_cases_cover_every_registered_kind():
    assert sorted(KL_ESTIMATORS) == sorted(KL_CASES)


def test_kl_negative_log_ratio_and_k3_clamp():
    # d = -ln 2: abs = ln 2 with gradient -1; k3 = e^{ln 2} - ln 2 - 1 = 0.306853 (non-negative either way)
    logprob = torch.tensor([math.log(0.25)], requires_grad=True)
    value = kl(logprob, torch.tensor([math.log(0.5)]), "abs")
    value.sum().backward()
    assert_close(value, torch.tensor([LN2]))
    assert_close(logprob.grad, torch.tensor([-1.0]))
    assert_close(kl(logprob, torch.tensor([math.log(0.5)]), "k3"), torch.tensor([1 - LN2]))
    # d = -50 would give e^50: clamped to the bound 10
    assert_close(kl(torch.tensor([-50.0]), torch.tensor([0.0]), "k3"), torch.tensor([10.0]))
    with pytest.raises(ValueError, match="valid: abs, k1, k1\\+, k2, k3, k3\\+"):
        kl(logprob, logprob, "k4")


def test_entropy_is_stable():
    # p = (1/4, 3/4): H = -(0.25 ln 0.25 + 0.75 ln 0.75) = 0.562335
    assert_close(entropy(torch.tensor([0.0, math.log(3)])), torch.tensor(0.562335), rtol=0, atol=1e-6)
    # logits (1000, 1001) = (0, 1) shifted: p = (1/(1+e), e/(1+e)) = (0.268941, 0.731059), H = 0.582203, no overflow
    assert_close(
        entropy(torch.tensor([[0.0, 1.0], [1000.0, 1001.0]])), torch.full((2,), 0.582203), rtol=0, atol=1e-6
    )
    # a banned token (-inf) contributes nothing: uniform over 2 -> ln 2; four equal logits -> ln 4
    assert_close(entropy(torch.tensor([0.0, 0.0, -math.inf])), torch.tensor(LN2))
    assert_close(entropy(torch.zeros(3, 5, 4)), torch.full((3, 5), math.log(4)))


# Aggregation hand example: rows (1, 2, 3), (4, 5, inf-masked), (7, 7, 7 all masked) -> 5 tokens, 2 rows.
LOSS_MAT = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, math.inf], [7.0, 7.0, 7.0]])
AGG_MASK = torch.tensor([[1, 1, 1], [1, 1, 0], [0, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", 15 / 5),  # (6 + 9) / 5 tokens
        ("seq-mean-token-mean", (6 / 3 + 9 / 2) / 2),  # (2 + 4.5) / 2 rows = 3.25
        ("seq-mean-token-sum", 15 / 2),
        ("seq-mean-token-sum-norm", 15 / 4),  # verl: sum of the row sums / norm_length 4, no row mean
    ],
)
def test_aggregate_modes(mode, expected):
    assert_close(aggregate(LOSS_MAT, AGG_MASK, mode, norm_length=4), torch.tensor(expected))


def test_seq_mean_token_sum_norm_is_verls_formula_by_hand():
    # verl agg_loss: torch.sum(seq_losses) / loss_scale_factor. Rows of 3 and 2 tokens, norm length 8:
    # (0.5 + 1.5 - 1.0) + (2.0 + 0.25) = 1.0 + 2.25 = 3.25; 3.25 / 8 = 0.40625 (a row mean would give 0.203125)
    loss_mat = torch.tensor([[0.5, 1.5, -1.0], [2.0, 0.25, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    assert_close(aggregate(loss_mat, mask, "seq-mean-token-sum-norm", norm_length=8), torch.tensor(0.40625))
    # split-invariant with no global count: each row alone, summed
    parts = [
        aggregate(loss_mat[i : i + 1], mask[i : i + 1], "seq-mean-token-sum-norm", norm_length=8)
        for i in (0, 1)
    ]
    assert_close(parts[0] + parts[1], torch.tensor(0.40625))


def test_aggregate_with_global_counts():
    assert_close(aggregate(LOSS_MAT, AGG_MASK, "token-mean", global_tokens=10), torch.tensor(1.5))
    assert_close(aggregate(LOSS_MAT, AGG_MASK, "seq-mean-token-sum", global_rows=4), torch.tensor(3.75))
    assert loss_counts(AGG_MASK) == (5, 2)


def test_aggregate_rejects_bad_input():
    with pytest.raises(
        ValueError, match="valid: seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm"
    ):
        aggregate(LOSS_MAT, AGG_MASK, "mean")
    with pytest.raises(ValueError, match="needs norm_length"):
        aggregate(LOSS_MAT, AGG_MASK, "seq-mean-token-sum-norm")
    with pytest.raises(ValueError, match="global_tokens must be a positive"):
        aggregate(LOSS_MAT, AGG_MASK, "token-mean", global_tokens=0)
    assert len(AGGREGATIONS) == 4
