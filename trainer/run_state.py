"""A Trainer's checkpoint: what it holds (models, optimizer, schedule, data cursor, entropy, config), writing it
with the step's HF export, and resuming from the latest one (``trainer.checkpoint`` writes the files atomically)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import Tensor

from trainer.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint, set_rng_state
from trainer.config import to_dict

if TYPE_CHECKING:
    from trainer.engine import Trainer


def trainer_state(trainer: Trainer) -> dict[str, Any]:
    """Whole (unsharded) states; a collective when FSDP-sharded, so every rank calls it."""
    dist, update = trainer.dist, trainer.updater
    return {
        "model": dist.model_state(trainer.policy),
        # the KL reference is the warmed-up policy (``trainer.warmup``), which a resumed run cannot rebuild
        "reference": dist.model_state(trainer.reference) if trainer.reference is not None else None,
        "critic": dist.model_state(trainer.critic) if trainer.critic is not None else None,
        "optimizer": dist.optimizer_state(update.trained, update.optimizer),
        "scheduler": update.scheduler.state_dict(),
        "prompts": trainer.prompts.state_dict(),
        "last_entropy": update.last_entropy,
        "config": to_dict(trainer.config),
    }


def save_step(trainer: Trainer) -> None:
    """Checkpoint and export the current step (every rank gathers the state; rank 0 writes)."""
    state = trainer_state(trainer)
    if trainer.dist.is_main:
        save_checkpoint(
            trainer.run_dir,
            trainer.step,
            state,
            export=lambda directory: export(trainer, directory, state["model"]),
        )
    trainer.dist.barrier()


def export(trainer: Trainer, directory: Path, model_state: dict[str, Tensor]) -> None:
    """Write the policy (``model_state``, whole) and tokenizer in HF format (what ``local/`` loads)."""
    trainer.policy.save_pretrained(directory, state_dict=model_state)
    trainer.tokenizer.save_pretrained(directory)


def resume_latest(trainer: Trainer) -> bool:
    """Load the latest checkpoint of the run directory; False when there is none."""
    path = latest_checkpoint(trainer.run_dir)
    if path is None:
        return False
    state = load_checkpoint(path)
    dist, update = trainer.dist, trainer.updater
    dist.load_model_state(trainer.policy, state["model"])
    if trainer.reference is not None and state.get("reference") is not None:
        dist.load_model_state(trainer.reference, state["reference"])
    if trainer.critic is not None and state["critic"] is not None:
        dist.load_model_state(trainer.critic, state["critic"])
    dist.load_optimizer_state(update.trained, update.optimizer, state["optimizer"])
    update.scheduler.load_state_dict(state["scheduler"])
    trainer.prompts.load_state_dict(state["prompts"])
    update.last_entropy = state.get("last_entropy")
    set_rng_state(state["rng"])
    trainer.step = state["step"]
    return True
