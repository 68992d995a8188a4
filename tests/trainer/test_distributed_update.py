"""Data parallelism: two gloo processes, each on half of the groups, apply the gradient one process computes on all."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest
import torch

_WORKER = textwrap.dedent(
    """
    import sys, torch
    from trainer.config import ModelConfig, OptimConfig, TrainConfig
    from trainer.engine import Trainer
    from trainer.samples import Sample

    torch.set_num_threads(1)
    model_dir, out = sys.argv[1], sys.argv[2]
    g = torch.Generator().manual_seed(0)
    samples = []
    for group in range(4):
        for member in range(2):
            length = 2 + group + member
            samples.append(Sample(
                prompt_ids=torch.randint(3, 500, (5,), generator=g).tolist(),
                response_ids=torch.randint(3, 500, (length,), generator=g).tolist(),
                loss_mask=[1] * length, group_key=f"q{group}", reward=float(member + group % 2),
            ))
    config = TrainConfig(model=ModelConfig(path=model_dir), optim=OptimConfig(grad_clip=100.0))
    trainer = Trainer(config, out + ".run")
    step = trainer.optimizer.step
    grads = {}

    def record_then_step(*args, **kwargs):  # the summed gradients AdamW is about to apply
        grads.update({n: p.grad.clone() for n, p in trainer.policy.named_parameters()})
        return step(*args, **kwargs)

    trainer.optimizer.step = record_then_step
    mine = [s for s in samples if int(s.group_key[1:]) % trainer.dist.world_size == trainer.dist.rank]
    trainer._update(mine)
    if trainer.dist.is_main:
        torch.save(grads, out)
    """
)


def _run(tiny_model_dir, out, world_size):
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    free = port.getsockname()[1]
    port.close()
    procs = []
    for rank in range(world_size):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(rank)}
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free), OMP_NUM_THREADS="1")
        procs.append(
            subprocess.Popen([sys.executable, "-c", _WORKER, str(tiny_model_dir), str(out)], env=env)
        )
    assert all(p.wait(timeout=120) == 0 for p in procs)
    return torch.load(out)


@pytest.mark.slow
def test_two_gloo_ranks_update_like_one_process(tiny_model_dir, tmp_path):
    alone = _run(tiny_model_dir, tmp_path / "one.pt", 1)
    split = _run(tiny_model_dir, tmp_path / "two.pt", 2)
    assert alone.keys() == split.keys() and len(alone) > 0
    assert any(bool(g.abs().sum() > 0) for g in alone.values())
    for name in alone:
        torch.testing.assert_close(split[name], alone[name], atol=1e-7, rtol=1e-5)
