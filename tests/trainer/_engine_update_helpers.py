"""One fixed batch of samples and the trainer update on it, shared by the engine-level invariance tests and the
two-rank worker process (``python _engine_update_helpers.py MODEL_DIR OUT`` under a torch.distributed env)."""

from __future__ import annotations

import copy
import dataclasses
import sys
from typing import Any

import torch
from torch.distributed.tensor import DTensor

from mara_bench.core.samples import Sample
from mara_bench.trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
from mara_bench.trainer.run.engine import Trainer


def make_samples() -> list[Sample]:
    """4 groups (``q0``..``q3``) of 2 samples, responses 2-6 tokens, rewards that differ within the groups."""
    g = torch.Generator().manual_seed(0)
    samples = []
    for group in range(4):
        for member in range(2):
            length = 2 + group + member
            samples.append(
                Sample(
                    prompt_ids=torch.randint(3, 500, (5,), generator=g).tolist(),
                    response_ids=torch.randint(3, 500, (length,), generator=g).tolist(),
                    loss_mask=[1] * length,
                    group_key=f"q{group}",
                    reward=float(member + group % 2),
                )
            )
    return samples


def train_config(model_dir: str, parallel: str = "replicate", **optim: Any) -> TrainConfig:
    return TrainConfig(
        model=ModelConfig(path=model_dir),
        task=TaskConfig(args={"n_prompts": 8, "total": 7}),
        rollout=RolloutConfig(prompts_per_step=2, group_size=2, max_tokens=4),
        optim=OptimConfig(**{"grad_clip": 100.0, "token_budget": 24, **optim}),
        parallel=parallel,
    )


def update(trainer: Trainer, samples: list[Sample]) -> dict[str, Any]:
    """Metrics, the whole gradients AdamW applies, and the whole parameters after its step (rank 0)."""
    grads = {}

    def record(optimizer, args, kwargs):
        for name, p in trainer.policy.named_parameters():
            grads[name] = p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad.clone()

    hook = trainer.updater.optimizer.register_step_pre_hook(record)
    metrics = trainer.updater(samples, trainer.step)
    hook.remove()
    return {"metrics": metrics, "grads": grads, "params": trainer.state_dict()["model"]}


def two_rank_worker(model_dir: str, out: str) -> None:
    """Both modes on unequal shares (rank 0: group q0, rank 1: q1-q3), then an FSDP save, resume and full step,
    and a full FSDP PPO step (critic and reference sharded as well)."""
    torch.set_num_threads(1)
    results = {}
    for parallel in ("replicate", "fsdp"):
        trainer = Trainer(train_config(model_dir, parallel), f"{out}.{parallel}")
        groups = {"q0"} if trainer.dist.rank == 0 else {"q1", "q2", "q3"}
        results[parallel] = update(trainer, [s for s in make_samples() if s.group_key in groups])
    trainer.save()
    resumed = Trainer(train_config(model_dir, "fsdp"), f"{out}.fsdp", resume=True)
    # whole states, on rank 0 only; copied, as the optimizer's step counters are the live tensors
    resumed_state, saved_state = copy.deepcopy(resumed.state_dict()), copy.deepcopy(trainer.state_dict())
    results["rollout_step"] = resumed.train_step()
    ppo = train_config(model_dir, "fsdp")
    ppo.algorithm = dataclasses.replace(ppo.algorithm, advantage="gae", kl_coef=0.1, ppo_epochs=2)
    results["ppo_step"] = Trainer(ppo, f"{out}.ppo").train_step()  # sharded critic and reference too
    if trainer.dist.is_main:
        results["resumed"] = {
            "params": resumed_state["model"],
            "optimizer": resumed_state["optimizer"]["state"],
        }
        results["saved_optimizer"] = saved_state["optimizer"]["state"]
        torch.save(results, out)


if __name__ == "__main__":
    two_rank_worker(sys.argv[1], sys.argv[2])
