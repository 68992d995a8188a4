"""Per-role metrics: the sample keys of each role, and token shares that add up to the role's token mean however
the batch is split into micro-batches."""

from __future__ import annotations

import pytest
import torch

from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.losses import aggregate, policy_loss
from mara_bench.trainer.learner import role_metrics


def row(role: str, reward: float, advantage, mask=(1, 1, 0)) -> Sample:
    return Sample([1], [5, 6, 7], list(mask), role=role, reward=reward, advantage=advantage)


def test_sample_metrics_per_role_with_the_systems_names():
    samples = [
        row("solver", 1.0, 0.5),
        row("solver", 0.0, 0.0),
        row("verifier", -1.0, [0.0, 0.0, 3.0]),  # non-zero only on an untrained token: learns nothing
        row("verifier", 1.0, [0.0, 0.2, 0.0]),
    ]
    roles = ["solver", "verifier", "corrector"]
    metrics = role_metrics.sample_metrics(role_metrics.sample_sums(samples, roles), roles)
    assert metrics["role/solver/samples"] == 2 and metrics["role/solver/reward_mean"] == 0.5
    assert metrics["role/solver/adv_nonzero_frac"] == 0.5
    assert metrics["role/verifier/adv_nonzero_frac"] == 0.5
    assert metrics["role/verifier/response_tokens"] == 2.0
    assert metrics["role/corrector/samples"] == 0 and "role/corrector/reward_mean" not in metrics


def test_token_shares_add_up_to_each_roles_token_mean_over_micro_batches():
    torch.manual_seed(0)
    rows, width = 6, 5
    mask = (torch.rand(rows, width) > 0.3).float()
    old, new = torch.randn(rows, width), torch.randn(rows, width)
    advantages, token_entropy = torch.randn(rows), torch.rand(rows, width)
    row_roles = torch.tensor([0, 1, 0, 1, 1, 0])
    roles = ["planner", "worker"]
    tokens = [float(mask[row_roles == i].sum()) for i in range(2)]
    clip = {"clip_low": 0.2, "clip_high": 0.2, "dual_clip": 3.0}

    def shares(part: slice) -> dict[str, torch.Tensor]:
        return role_metrics.token_shares(
            roles,
            row_roles[part],
            mask[part],
            old[part],
            new[part],
            advantages[part],
            token_entropy[part],
            tokens,
            **clip,
        )

    whole = shares(slice(0, rows))
    halves = [shares(slice(0, 2)), shares(slice(2, rows))]
    for name, value in whole.items():
        assert float(sum(h[name] for h in halves)) == pytest.approx(float(value), abs=1e-6)
    worker = mask * (row_roles == 1).unsqueeze(-1)
    expected_loss, _ = policy_loss(old, new, advantages, worker, mode="token-mean", **clip)
    assert float(whole["role/worker/loss"]) == pytest.approx(float(expected_loss), abs=1e-6)
    entropy = aggregate(token_entropy, worker, "token-mean")
    assert float(whole["role/worker/entropy"]) == pytest.approx(float(entropy), abs=1e-6)
