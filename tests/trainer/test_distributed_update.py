"""Data parallelism: two gloo ranks, replicated or FSDP-sharded, take the step one process takes.

One launch of two worker processes runs both modes (the single-process reference runs in the test process):
each rank trains on an UNEQUAL share of the same samples (1 vs 3 of the 4 groups, so the ranks also make
different numbers of micro-batch passes), and must end with the loss, gradients and parameters of one process
training on all of them. The FSDP run then checkpoints, resumes into a fresh sharded trainer, and takes a full
rollout-and-update step (token-by-token generation of different lengths on each rank); a sharded PPO run (critic
and reference model sharded too) takes one as well.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import _engine_update_helpers as helpers  # noqa: E402

from mara_bench.trainer.run.engine import Trainer  # noqa: E402


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch_two_ranks(tiny_model_dir, out):
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)}
        # the workers import this checkout's code, whatever is installed
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(
            subprocess.Popen([sys.executable, helpers.__file__, str(tiny_model_dir), str(out)], env=env)
        )
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    return torch.load(out, weights_only=False)


@pytest.mark.slow
def test_two_gloo_ranks_replicated_or_fsdp_step_like_one_process(tiny_model_dir, tmp_path):
    torch.set_num_threads(1)
    trainer = Trainer(helpers.train_config(str(tiny_model_dir)), tmp_path / "alone")
    alone = helpers.update(trainer, helpers.make_samples())
    ranks = _launch_two_ranks(tiny_model_dir, tmp_path / "two.pt")
    assert any(bool(g.abs().sum() > 0) for g in alone["grads"].values())
    for parallel in ("replicate", "fsdp"):
        split = ranks[parallel]
        assert split["metrics"]["loss"] == pytest.approx(alone["metrics"]["loss"], rel=1e-6, abs=1e-9)
        assert split["grads"].keys() == alone["grads"].keys()
        for name, grad in alone["grads"].items():
            torch.testing.assert_close(split["grads"][name], grad, atol=1e-7, rtol=1e-5, msg=name)
        assert split["params"].keys() == alone["params"].keys()
        for name, param in alone["params"].items():
            torch.testing.assert_close(split["params"][name], param, atol=1e-6, rtol=1e-5, msg=name)

    resumed, saved = ranks["resumed"], ranks["saved_optimizer"]
    for name, param in ranks["fsdp"]["params"].items():
        assert torch.equal(resumed["params"][name], param), name
    assert resumed["optimizer"].keys() == saved.keys() and saved
    for name, moments in saved.items():
        for key, value in moments.items():
            assert torch.equal(resumed["optimizer"][name][key], value), (name, key)
    step = ranks["rollout_step"]
    assert step["skipped"] == 0.0 and step["tokens"] > 0 and step["step"] == 0.0
    ppo = ranks["ppo_step"]
    assert (
        ppo["skipped"] == 0.0 and ppo["value_loss"] > 0 and ppo["kl"] == 0.0
    )  # epoch 1: policy == reference
