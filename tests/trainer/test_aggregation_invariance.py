"""Loss aggregation is split-invariant: 1 vs 4 micro-batches, and 1 vs 2 gloo processes, give the same loss and
gradients for every mode (policy loss with clipping + a k3 KL term on a tiny linear policy); and the engine's
update on the tiny model gives the same loss and gradients in 1 or 6-8 micro-batches, padded or packed."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).parent))
import _engine_update_helpers as engine_helpers  # noqa: E402
import _loss_split_helpers as helpers  # noqa: E402

from mara_bench.trainer.algorithms.losses import AGGREGATIONS, loss_counts, policy_loss  # noqa: E402
from mara_bench.trainer.run.engine import Trainer  # noqa: E402

MODES = sorted(AGGREGATIONS)


def full_batch(mode: str) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Loss and gradients of the whole batch in one piece (its own counts)."""
    model, batch = helpers.make_problem()
    tokens, rows = loss_counts(batch["mask"])
    loss = helpers.part_loss(model, batch, mode, tokens, rows)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def test_the_problem_exercises_every_clip_branch():
    # A split-invariance test is only meaningful if the clipped and dual-clipped branches actually occur.
    model, batch = helpers.make_problem()
    logprob = helpers.token_logprobs(model, batch["features"], batch["actions"])
    _, stats = policy_loss(batch["old_logprob"], logprob, batch["advantages"], batch["mask"], dual_clip=1.5)
    assert stats["clip_frac_high"] > 0
    assert stats["clip_frac_low"] > 0
    assert stats["dual_clip_frac"] > 0


@pytest.mark.parametrize("mode", MODES)
def test_four_micro_batches_sum_to_the_full_batch(mode):
    expected_loss, expected_grads = full_batch(mode)
    model, batch = helpers.make_problem()
    tokens, rows = loss_counts(batch["mask"])
    total = torch.zeros(())
    for start in range(0, helpers.ROWS, 2):
        # each micro-batch is trimmed to its own padded width: the result must not depend on padding
        part = helpers.rows_of(batch, slice(start, start + 2))
        loss = helpers.part_loss(model, part, mode, tokens, rows)
        loss.backward()  # gradients accumulate (sum) across micro-batches
        total += loss.detach()
    torch.testing.assert_close(total, expected_loss, rtol=1e-6, atol=1e-7)
    for grad, expected in zip([p.grad for p in model.parameters()], expected_grads, strict=True):
        torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-7)


def test_local_counts_would_break_invariance():
    # The control: averaging per-micro-batch token means (each with its OWN count) is not the full-batch loss,
    # so the global counts above are what makes the sums agree.
    expected_loss, _ = full_batch("token-mean")
    model, batch = helpers.make_problem()
    parts = [helpers.rows_of(batch, slice(start, start + 2)) for start in range(0, helpers.ROWS, 2)]
    naive = (
        sum(helpers.part_loss(model, part, "token-mean", *loss_counts(part["mask"])) for part in parts) / 4
    )
    assert abs(float(naive.detach()) - float(expected_loss)) > 1e-3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_gloo_processes_match_one(tmp_path):
    mp.spawn(helpers.gloo_worker, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    results = torch.load(tmp_path / "gloo_results.pt")
    assert sorted(results) == MODES
    for mode in MODES:
        expected_loss, expected_grads = full_batch(mode)
        torch.testing.assert_close(results[mode]["loss"], expected_loss, rtol=1e-6, atol=1e-7)
        for grad, expected in zip(results[mode]["grads"], expected_grads, strict=True):
            torch.testing.assert_close(grad, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("layout", ["bucket", "pack"])
def test_engine_update_is_the_same_in_one_or_many_micro_batches(tiny_model_dir, tmp_path, layout):
    results = {}
    for budget in (4096, 16):
        config = engine_helpers.train_config(
            str(tiny_model_dir), token_budget=budget, batching=layout, max_padding=0.9
        )
        trainer = Trainer(config, tmp_path / f"{layout}-{budget}")
        results[budget] = engine_helpers.update(trainer, engine_helpers.make_samples())
    one, many = results[4096], results[16]
    assert one["metrics"]["micro_batches"] == 1.0 and many["metrics"]["micro_batches"] >= 4.0
    assert many["metrics"]["loss"] == pytest.approx(one["metrics"]["loss"], rel=1e-6, abs=1e-9)
    for name, grad in one["grads"].items():
        # packed rows attend within one long sequence: float noise ~2e-7 on gradients of size ~0.1-0.5
        torch.testing.assert_close(many["grads"][name], grad, atol=1e-6, rtol=1e-5, msg=name)
