"""A run's checkpoint: what it holds (models, optimizer, schedule, data cursor, entropy, config), writing it
with the step's HF export, and resuming from the latest one (``mara_bench.trainer.run.checkpoint`` writes the files
atomically)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from torch import Tensor

from mara_bench.harness.packaged_models import read_origin, write_origin
from mara_bench.harness.redaction import redact_record
from mara_bench.trainer.config import TrainConfig, to_dict
from mara_bench.trainer.learner.adapters import export_adapters
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.learner.models import Models
from mara_bench.trainer.learner.update import PolicyUpdate
from mara_bench.trainer.rollouts.rollout import PromptOrder
from mara_bench.trainer.run.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
    set_rng_state,
)


@dataclass(frozen=True)
class RunState:
    """The parts of a run a checkpoint saves and a resumed run loads."""

    config: TrainConfig
    dist: Distributed
    models: Models
    updater: PolicyUpdate
    """The optimizer, learning-rate schedule and last entropy."""
    prompts: PromptOrder
    """The data cursor."""


def state_dict(run: RunState) -> dict[str, Any]:
    """Whole (unsharded) states; a collective when FSDP-sharded, so every rank calls it."""
    dist, update, models = run.dist, run.updater, run.models
    return {
        "model": dist.model_state(models.policy),
        # the KL reference is the warmed-up policy (``mara_bench.trainer.run.warmup``), which a resumed run cannot rebuild
        "reference": (
            dist.model_state(models.reference)
            if models.reference is not None and models.adapters is None  # else the policy's own base
            else None
        ),
        "critic": dist.model_state(models.critic) if models.critic is not None else None,
        "optimizer": dist.optimizer_state(update.trained, update.optimizer),
        "scheduler": update.scheduler.state_dict(),
        "prompts": run.prompts.state_dict(),
        "last_entropy": update.last_entropy,
        "config": redact_record(to_dict(run.config)),  # a record of the run: credentials hidden
    }


def save_step(run: RunState, run_dir: Path, step: int) -> None:
    """Checkpoint and export ``step`` (every rank gathers the state; rank 0 writes)."""
    state = state_dict(run)
    if run.dist.is_main:
        save_checkpoint(
            run_dir, step, state, export=lambda directory: export(run.models, directory, state["model"])
        )
    run.dist.barrier()


def export(models: Models, directory: Path, model_state: dict[str, Tensor]) -> None:
    """Write the policy (``model_state``, whole) and tokenizer in HF format (what ``local/`` loads), and the base
    model's origin (a packaged model's source and quantisation) marked as trained in this run; under per-role
    adapters, each role's adapter as a PEFT folder beside the base's reference
    (``mara_bench.trainer.learner.adapters.export_adapters``) instead of the policy."""
    if models.adapters is not None:
        export_adapters(models.policy, directory, models.path)
    else:
        models.policy.save_pretrained(directory, state_dict=model_state)
    models.tokenizer.save_pretrained(directory)
    origin = read_origin(models.path)
    if origin is not None:
        write_origin(directory, replace(origin, derived_from=str(directory.parents[1].absolute())))


def resume_latest(run: RunState, run_dir: Path) -> int | None:
    """Load the latest checkpoint of ``run_dir`` into ``run``; the step it was taken at, ``None`` when there
    is none."""
    path = latest_checkpoint(run_dir)
    if path is None:
        return None
    state = load_checkpoint(path)
    dist, update, models = run.dist, run.updater, run.models
    dist.load_model_state(models.policy, state["model"])
    if models.reference is not None and state.get("reference") is not None:
        dist.load_model_state(models.reference, state["reference"])
    if models.critic is not None and state["critic"] is not None:
        dist.load_model_state(models.critic, state["critic"])
    dist.load_optimizer_state(update.trained, update.optimizer, state["optimizer"])
    update.scheduler.load_state_dict(state["scheduler"])
    run.prompts.load_state_dict(state["prompts"])
    update.last_entropy = state.get("last_entropy")
    set_rng_state(state["rng"])
    return state["step"]
