"""Doubles for the method tests: a per-role scripted ``Chat``, a fake ``Toolbox``, a task with a fixed reward, and
the smoke-step config on the session's tiny model."""

from __future__ import annotations

import asyncio
from typing import Any

import torch

from mara_bench.core.episodes import Episode, Message, Reply, Toolbox
from mara_bench.harness.systems import run_system
from mara_bench.trainer.config import (
    AlgorithmConfig,
    ModelConfig,
    OptimConfig,
    RolloutConfig,
    TaskConfig,
    TrainConfig,
)


class RoleScript:
    """Replies popped in order from a queue per role."""

    def __init__(self, scripts: dict[str, list[str]]):
        self.scripts = {role: list(replies) for role, replies in scripts.items()}

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        if not self.scripts.get(role):
            raise AssertionError(f"role {role!r} was called more often than scripted")
        return Reply(text=self.scripts[role].pop(0), model=f"scripted/{role}")


def tool_returning(**outputs: str) -> Toolbox:
    """A Toolbox whose tool ``name`` returns ``outputs[name]`` whatever its arguments."""

    def make(text: str):
        async def tool(**_: Any) -> str:
            return text

        return tool

    return Toolbox({name: make(text) for name, text in outputs.items()})


def run(
    system: str, question: str, scripts: dict[str, list[str]], toolbox: Toolbox | None = None, **options
) -> Episode:
    """One real run of ``system`` on scripted replies."""
    return asyncio.run(run_system(system, question, RoleScript(scripts), toolbox or Toolbox(), **options))


class RewardByAnswer:
    """A task whose outcome reward is ``rewards[final_answer]``."""

    def __init__(self, rewards: dict[str, float]):
        self.rewards = rewards

    def reward(self, item: dict[str, Any], episode: Episode) -> float:
        return self.rewards[episode.final_answer]


def smoke_config(model_dir, task: TaskConfig, **algorithm: Any) -> TrainConfig:
    """One question, two episodes, four new tokens per call: a run of ``task`` on the tiny model."""
    return TrainConfig(
        model=ModelConfig(path=str(model_dir)),
        task=task,
        rollout=RolloutConfig(prompts_per_step=1, group_size=2, max_tokens=4),
        algorithm=AlgorithmConfig(**algorithm),
        optim=OptimConfig(lr=1e-2, token_budget=16384),
        steps=1,
        save_every=0,
    )


def two_steps(trainer, scripted: list[Episode]) -> tuple[dict[str, float], dict[str, float], bool]:
    """A real rollout step, then a step whose rollout is replaced by ``scripted`` episodes (rewards that differ, so
    the update is not zero); returns both steps' metrics and whether the second one changed the policy."""
    real = trainer.train_step()

    async def scripted_rollout(items):
        return [list(scripted) for _ in items], [0] * len(items)

    trainer.source.episodes = scripted_rollout
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = trainer.train_step()
    moved = any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters(), strict=True))
    return real, metrics, moved
