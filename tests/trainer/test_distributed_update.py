"""Data parallelism: two gloo ranks, replicated or FSDP-sharded, take the step one process takes.

One launch of two worker processes runs both modes (the single-process reference runs in the test process):
each rank trains on an UNEQUAL share of the same samples (1 vs 3 of the 4 groups, so the ranks also make
different numbers of micro-batch passes), and must end with the loss, gradients and parameters of one process
training on all of them. The FSDP run then checkpoints, resumes into a fresh sharded trainer, and takes a full
rollout-and-update step (token-by-token generation of different lengths on each rank).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest
import torch

_SETUP = textwrap.dedent(
    """
    import copy, sys, torch
    from torch.distributed.tensor import DTensor
    from trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
    from trainer.engine import Trainer
    from trainer.samples import Sample

    torch.set_num_threads(1)

    def make_samples():
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
        return samples

    def config(model_dir, parallel):
        return TrainConfig(
            model=ModelConfig(path=model_dir),
            task=TaskConfig(args={"n_prompts": 8, "total": 7}),
            rollout=RolloutConfig(prompts_per_step=2, group_size=2, max_tokens=4),
            optim=OptimConfig(grad_clip=100.0, token_budget=24),
            parallel=parallel,
        )

    def update(trainer, samples):
        \"\"\"Loss, the whole gradients AdamW applies, and the whole parameters after its step.\"\"\"
        grads = {}

        def record(optimizer, args, kwargs):
            for name, p in trainer.policy.named_parameters():
                grads[name] = p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad.clone()

        hook = trainer.optimizer.register_step_pre_hook(record)
        metrics = trainer._update(samples)
        hook.remove()
        return {"loss": metrics["loss"], "grads": grads, "params": trainer.state_dict()["model"]}
    """
)

_WORKER = _SETUP + textwrap.dedent(
    """
    model_dir, out = sys.argv[1], sys.argv[2]
    results = {}
    for parallel in ("replicate", "fsdp"):
        trainer = Trainer(config(model_dir, parallel), f"{out}.{parallel}")
        groups = {"q0"} if trainer.dist.rank == 0 else {"q1", "q2", "q3"}
        results[parallel] = update(trainer, [s for s in make_samples() if s.group_key in groups])
    trainer.save()
    resumed = Trainer(config(model_dir, "fsdp"), f"{out}.fsdp", resume=True)
    # whole states, on rank 0 only; copied, as the optimizer's step counters are the live tensors
    resumed_state, saved_state = copy.deepcopy(resumed.state_dict()), copy.deepcopy(trainer.state_dict())
    results["rollout_step"] = resumed.train_step()
    if trainer.dist.is_main:
        results["resumed"] = {"params": resumed_state["model"], "optimizer": resumed_state["optimizer"]["state"]}
        results["saved_optimizer"] = saved_state["optimizer"]["state"]
        torch.save(results, out)
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch_two_ranks(tiny_model_dir, out):
    port = _free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)}
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(
            subprocess.Popen([sys.executable, "-c", _WORKER, str(tiny_model_dir), str(out)], env=env)
        )
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    return torch.load(out, weights_only=False)


def _single_process(tiny_model_dir, tmp_path):
    scope: dict = {}
    exec(_SETUP, scope)
    trainer = scope["Trainer"](scope["config"](str(tiny_model_dir), "replicate"), tmp_path / "alone")
    return scope["update"](trainer, scope["make_samples"]())


@pytest.mark.slow
def test_two_gloo_ranks_replicated_or_fsdp_step_like_one_process(tiny_model_dir, tmp_path):
    torch.set_num_threads(1)
    alone = _single_process(tiny_model_dir, tmp_path)
    ranks = _launch_two_ranks(tiny_model_dir, tmp_path / "two.pt")
    assert any(bool(g.abs().sum() > 0) for g in alone["grads"].values())
    for parallel in ("replicate", "fsdp"):
        split = ranks[parallel]
        assert split["loss"] == pytest.approx(alone["loss"], rel=1e-6, abs=1e-9), parallel
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
