"""Rollout: each question's group of episodes, sampled with the live policy.

Episodes come from the harness system (the evaluation code) run with the policy as its ``Chat`` (transformers
generation, or a vLLM engine synced to the policy: its full weights, or under per-role adapters its adapters),
or from the method's own rollout when it has one (MarsRL's grouped rollouts, over the same system steps). An
LLM-judged task grades each system run as it ends: an unscored judgement drops the episode from its group and is
counted (an unscored judgement is never a reward of 0).

Also here: the data cursor (``PromptOrder``), the per-step seeding that makes a resumed run draw what an
uninterrupted one would, a seed per episode (``mara_bench.trainer.episode_seeds``: its draws do not depend on
how its calls were batched), and the set-up of the task, toolbox and policy chat a rollout runs over.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mara_bench.core.episodes import Chat, Episode, Toolbox
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.systems import build_toolbox, get_system, run_system
from mara_bench.harness.tools.toolbox import CACHE_SETTINGS, with_tool_cache
from mara_bench.trainer.adapter_config import VLLM_LORA_RANKS, LoraConfig
from mara_bench.trainer.config import RolloutConfig, TaskConfig
from mara_bench.trainer.episode_seeds import SEED_BITS, bind_episode_seed
from mara_bench.trainer.learner.adapters import RoleAdapters
from mara_bench.trainer.learner.models import Models
from mara_bench.trainer.learner.policy import PolicyChat
from mara_bench.trainer.methods.base import GroupRollout
from mara_bench.trainer.rollouts.adapter_sync import AdapterFolders
from mara_bench.trainer.rollouts.frozen_roles import RoutedChat
from mara_bench.trainer.rollouts.parity import sync_gap
from mara_bench.trainer.rollouts.scripted_roles import chat_for
from mara_bench.trainer.rollouts.vllm_rollout import EngineAdapters, rollout_backend

logger = logging.getLogger(__name__)


class PromptOrder:
    """Question indices in a fresh shuffled order each epoch; ``(epoch, position)`` is the data cursor."""

    def __init__(self, size: int, seed: int):
        if size < 1:
            raise ValueError("the task has no questions to train on")
        self.size, self.seed, self.epoch, self.position = size, seed, 0, 0

    def take(self, count: int) -> list[int]:
        taken: list[int] = []
        while len(taken) < count:
            order = list(range(self.size))
            random.Random(self.seed * 1_000_003 + self.epoch).shuffle(order)
            chunk = order[self.position : self.position + count - len(taken)]
            taken += chunk
            self.position += len(chunk)
            if self.position == self.size:
                self.epoch, self.position = self.epoch + 1, 0
        return taken

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position = state["epoch"], state["position"]


def load_task(factory: str, args: dict[str, Any]) -> Any:
    """Call the ``module:function`` task factory named in the config."""
    module_name, _, function = factory.partition(":")
    if not function:
        raise ValueError(f"task.factory must look like 'module:function', got {factory!r}")
    return getattr(importlib.import_module(module_name), function)(**args)


def training_task(task: TaskConfig) -> Any:
    """The recipe's task: a harness benchmark judged by its judge (``task.benchmark``), else the factory's."""
    if task.benchmark is None:
        return load_task(task.factory, task.args)
    from mara_bench.trainer.tasks.benchmark import benchmark_task

    return benchmark_task(
        task.benchmark,
        judge=task.judge,
        data=task.data,
        split=task.split,
        limit=task.limit,
        judge_options=task.judge_options,
        grader=task.grader,
    )


def seed_step(seed: int, step: int, rank: int) -> None:
    """Seed python, numpy and torch for one step of one rank."""
    value = (seed * 1_000_003 + step) * 1_009 + rank
    random.seed(value)
    np.random.seed(value % 2**32)
    torch.manual_seed(value)


def task_toolbox(task: Any, system: Any, tool_settings: dict[str, Any]) -> Toolbox:
    """The task's own toolbox when it has one (an offline corpus, say), else the system's tools as configured;
    either behind the tool cache when ``tool_settings`` turn it on (``tool_cache``, ``tool_snapshot``, ...)."""
    own = getattr(task, "toolbox", None)
    if own is None:
        return build_toolbox(system, tool_settings)
    others = sorted(set(tool_settings) - set(CACHE_SETTINGS))
    if others:
        raise ValueError(
            f"the task provides its own toolbox; remove the tool settings {others} from task.system_options "
            f"(of the tool settings, only {', '.join(CACHE_SETTINGS)} apply to it)"
        )
    return with_tool_cache(own, **tool_settings)


def vllm_generator(
    rollout: RolloutConfig,
    model_path: Path | str,
    dtype: torch.dtype,
    seed: int,
    steps: int,
    *,
    adapters: EngineAdapters | None = None,
) -> Any | None:
    """A vLLM engine on the base weights (seeded ``seed``) when the rollout backend is vLLM, else ``None``
    (``auto``: when the run's ``steps`` are expected to generate enough tokens to pay for its start-up); under
    per-role ``adapters``, with vLLM's multi-LoRA sized for them (``auto`` with a rank vLLM cannot serve: one
    line says why, and transformers decodes)."""
    expected = steps * rollout.prompts_per_step * rollout.group_size * rollout.max_tokens
    name = str(dtype).removeprefix("torch.")
    if rollout_backend(rollout.backend, model_path, expected, dtype=name) != "vllm":
        return None
    if adapters is not None and adapters.rank > VLLM_LORA_RANKS[-1]:
        logger.info(
            "rollout: per-role adapters decode with transformers: vLLM serves LoRA ranks up to %d, and "
            "model.lora.r is %d",
            VLLM_LORA_RANKS[-1],
            adapters.rank,
        )
        return None
    from mara_bench.trainer.rollouts.vllm_rollout import VLLMGenerator

    return VLLMGenerator(
        model_path,
        dtype=name,
        seed=seed,
        gpu_memory_utilization=rollout.vllm_gpu_memory,
        adapters=adapters,
    )


def routed(chat: PolicyChat, rollout: RolloutConfig) -> PolicyChat | RoutedChat:
    """The policy chat, or a ``RoutedChat`` over it when the recipe freezes some roles on other models."""
    return RoutedChat(chat, rollout.frozen_roles) if rollout.frozen_roles else chat


def policy_chat(
    rollout: RolloutConfig,
    policy: Any,
    tokenizer: Any,
    vllm: Any | None,
    adapters: RoleAdapters | None = None,
) -> PolicyChat:
    """The live policy as the systems' ``Chat``: transformers generation (through each role's adapter under
    ``adapters``), or the ``vllm`` engine."""
    sampling = Sampling(max_tokens=rollout.max_tokens, temperature=rollout.temperature, top_p=rollout.top_p)
    return PolicyChat(
        policy,
        tokenizer,
        defaults=sampling,
        generator=vllm,
        scheduler="static" if vllm is not None else rollout.scheduler,
        context_tokens=rollout.max_context_tokens,
        adapters=adapters,
    )


@dataclass
class Rollout:
    """What one step's episodes run over: the task, the harness system with its options and toolbox, the policy's
    chat, and the method's own rollout when it has one."""

    task: Any
    system: Any
    system_options: dict[str, Any]
    toolbox: Toolbox
    chat: PolicyChat | RoutedChat
    vllm: Any | None
    """The vLLM engine the chat generates with, synced to the policy before each step's rollout; ``None``."""
    own_rollout: GroupRollout | None
    group_size: int
    tokenizer: Any = None
    """The policy's tokenizer (a task's scripted roles count tokens with it)."""
    adapter_folders: AdapterFolders | None = None
    """Under per-role adapters on vLLM: where each sync writes the adapters the engine then serves."""

    @classmethod
    def build(
        cls,
        task_config: TaskConfig,
        settings: RolloutConfig,
        models: Models,
        *,
        seed: int,
        steps: int,
        own_rollout: GroupRollout | None,
        lora: LoraConfig | None = None,
        scratch: Path | None = None,
    ) -> Rollout:
        """The recipe's task and system over the models' policy chat, sampled under the ``rollout`` section
        (vLLM seeded with ``seed``, this rank's, and sized for ``steps`` syncs when configured); ``own_rollout``:
        the method's own rollout under the recipe, if it has one. Under per-role adapters (``models.adapters``,
        of shape ``lora``) a vLLM engine serves them from PEFT folders written under ``scratch``.

        The vLLM engine starts before the task is built: its kernel dispatcher scans every loaded module when it
        starts, and fails on numba's objects, which a task building a BM25 index (bm25s) loads."""
        plan = models.adapters
        if plan is not None and (lora is None or scratch is None):
            raise ValueError("a policy with per-role adapters needs their lora settings and a scratch dir")
        vllm = vllm_generator(
            settings,
            models.path,
            models.dtype,
            seed=seed,
            steps=steps,
            adapters=EngineAdapters(len(plan.names), lora.r) if plan is not None else None,
        )
        task = training_task(task_config)
        system = get_system(task_config.system)
        setup = system.setup(task_config.system_options)
        return cls(
            task=task,
            system=system,
            system_options=setup.options,
            toolbox=task_toolbox(task, system, setup.tool_settings),
            chat=routed(
                policy_chat(settings, models.policy, models.tokenizer, vllm, models.adapters),
                settings,
            ),
            vllm=vllm,
            own_rollout=own_rollout,
            group_size=settings.group_size,
            tokenizer=models.tokenizer,
            adapter_folders=(
                AdapterFolders(plan, scratch, models.path) if vllm is not None and plan is not None else None
            ),
        )

    def sync(self, policy: torch.nn.Module) -> dict[str, float]:
        """Load the policy's current weights into the vLLM engine and check them
        (``mara_bench.trainer.rollouts.parity.sync_gap``); nothing for transformers generation, which samples with the
        policy itself. Under per-role adapters the base stays as loaded and the adapters are what is synced: each
        trained one written afresh and served under a new request id, each frozen one kept."""
        if self.vllm is None:
            return {}
        if self.adapter_folders is None:
            self.vllm.sync(policy.named_parameters())
            return sync_gap(policy, self.chat.tokenizer, self.vllm)
        self.vllm.load_adapters(self.adapter_folders.save(policy))
        return sync_gap(policy, self.chat.tokenizer, self.vllm, self.adapter_folders.plan.names)

    def run_input(self, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The user message and system options of one question's runs: the item's question and the recipe's
        options, or, for a benchmark task, both as its evaluation task builds them (user template,
        instruction)."""
        own = getattr(self.task, "run_input", None)
        if own is None:
            return item["question"], self.system_options
        return own(item, self.system.name, self.system_options)

    def chat_for(self, item: dict[str, Any]) -> Chat:
        """The chat of one question's runs: the policy's, with the task's scripted roles
        (``mara_bench.trainer.rollouts.scripted_roles``)."""
        return chat_for(self.task, self.system.name, self.chat, item, self.tokenizer)

    async def groups(self, items: list[dict[str, Any]]) -> tuple[list[list[Episode]], list[int]]:
        """Each question's group of episodes, and how many episodes of it the task's judge left unscored
        (dropped from the group)."""
        if self.own_rollout is not None:  # one generator per question, drawn in order from the step's seed
            rngs = [random.Random(random.getrandbits(64)) for _ in items]
            seeds = [random.getrandbits(SEED_BITS) for _ in items]

            async def grouped(item: dict[str, Any], rng: random.Random, seed: int) -> list[Episode]:
                bind_episode_seed(seed)
                return await self.own_rollout(item, self.chat_for(item), rng)

            groups = [grouped(*args) for args in zip(items, rngs, seeds, strict=True)]
            return list(await asyncio.gather(*groups)), [0] * len(items)
        size = self.group_size
        grade = getattr(self.task, "grade", None)

        async def judged(item: dict[str, Any], seed: int) -> tuple[Episode, bool]:
            bind_episode_seed(seed)  # its draws follow its seed, not the order its calls are batched in
            question, options = self.run_input(item)
            episode = await run_system(
                self.system.name, question, self.chat_for(item), self.toolbox, **options
            )
            return episode, grade is None or await grade(item, episode) is not None

        seeds = [random.getrandbits(SEED_BITS) for _ in range(len(items) * size)]
        runs = await asyncio.gather(*[judged(items[i // size], seed) for i, seed in enumerate(seeds)])
        groups = [runs[i * size : (i + 1) * size] for i in range(len(items))]
        return (
            [[episode for episode, scored in group if scored] for group in groups],
            [sum(not scored for _, scored in group) for group in groups],
        )
