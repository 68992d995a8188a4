"""Where a training step's samples come from: a ``SampleSource`` hands ``Trainer.train_step`` a ``Batch`` of
rewarded samples, and the step (one for every source) turns them into advantages, an update and the step's
metrics.

* ``RolloutSource`` -- the synchronous rollout: each step samples ``prompts_per_step`` questions' groups with
  the current policy (``mara_bench.trainer.rollouts.rollout``), then the method rewards them
  (``mara_bench.trainer.rollouts.scoring``), and the policy that sampled scores the rows' generated tokens against the
  engine's logprobs (``mara_bench.trainer.rollouts.parity``).
* ``mara_bench.trainer.rollouts.pipelined.Pipeline`` -- MarsRL's pipelined / segmented rollouts: a rollout thread beside
  the learner, whose released groups carry the sampler's own (behaviour) logprobs and a bounded staleness.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.harness.toolcache.counts import counting
from mara_bench.trainer.config import OptimConfig, RolloutConfig
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.methods import concatenate
from mara_bench.trainer.methods.base import Method
from mara_bench.trainer.rollouts import parity
from mara_bench.trainer.rollouts.frozen_roles import RoutedChat
from mara_bench.trainer.rollouts.rollout import PromptOrder, Rollout, seed_step
from mara_bench.trainer.rollouts.scoring import rewarded_groups


@dataclass
class Batch:
    """One step's rewarded samples and the episodes they were made from."""

    items: list[dict[str, Any]]
    """The questions whose episodes ended in this batch."""
    episodes: list[list[Episode]]
    """Each question's episodes (its judge's scored ones)."""
    unscored: list[int]
    """Each question's episodes its judge left unscored (dropped)."""
    groups: list[list[Sample]]
    """The rewarded samples, one list per group the method's advantages see (a question, or a pipelined
    unit)."""
    started: float
    """``time.perf_counter()`` when the source began the batch: the step's time counts from here."""
    ready: float
    """When the source's own time ended (the step's ``time_update`` counts from here)."""
    metrics: dict[str, float] = field(default_factory=dict)
    """The source's own metrics (rollout and scoring times, tool-cache counts, parity, waits)."""
    behaviour: bool = False
    """The samples' ``old_logprobs`` are the sampler's own, the importance ratios' denominators."""
    staleness_bound: int | None = None
    """The most steps a sample's weights may lag the learner's (``policy_version``); ``None``: on-policy."""
    per_question: bool = True
    """``groups[i]`` are ``items[i]``'s rows, so the step writes them to ``<run>/rollouts/``."""


class SampleSource(Protocol):
    """What ``Trainer.train_step`` takes its samples from."""

    def next_batch(self, version: int) -> Batch:
        """The samples to train the policy of version ``version`` (the step number) on."""
        ...

    def updated(self, version: int) -> None:
        """The policy's weights of ``version`` are ready (the step's update is done)."""
        ...

    def close(self) -> None:
        """Stop whatever the source runs beside the learner."""
        ...


class RolloutSource:
    """The synchronous rollout: every step samples its own questions with the current policy, then rewards
    them."""

    def __init__(
        self,
        settings: RolloutConfig,
        optim: OptimConfig,
        seed: int,
        rollout: Rollout,
        method: Method,
        policy: torch.nn.Module,
        prompts: PromptOrder,
        dist: Distributed,
    ):
        self.settings, self.optim, self.seed = settings, optim, seed
        """The recipe's ``rollout`` and ``optim`` sections (the parity check's forwards) and its seed."""
        self.rollout, self.method = rollout, method
        self.policy, self.prompts, self.dist = policy, prompts, dist
        self.roles = list(rollout.system.roles)

    def next_batch(self, version: int) -> Batch:
        """Sampling is reseeded from ``(seed, version, rank)`` first, so a resumed run draws exactly what an
        uninterrupted one would."""
        seed_step(self.seed, version, self.dist.rank)
        started = time.perf_counter()
        task = self.rollout.task
        indices = self.prompts.take(self.settings.prompts_per_step)
        items = [task.items[i] for i in self.dist.shard(indices)]
        self.policy.eval()
        with self.dist.gathered(self.policy):
            synced = self.rollout.sync(self.policy)
            sync_end = time.perf_counter()
            with counting() as cache_counts:
                episodes, unscored = asyncio.run(self.episodes(items))
        rolled = time.perf_counter()
        groups = rewarded_groups(self.method, task, self.rollout.tokenizer, items, episodes)
        scored = time.perf_counter()
        metrics = {"time_rollout": rolled - sync_end, "time_scoring": scored - rolled}
        if isinstance(self.rollout.chat, RoutedChat):
            metrics.update(self.rollout.chat.take_served())
        if self.rollout.toolbox.cache is not None:  # this rank's tool-cache hits, misses, records, live calls
            metrics.update(cache_counts.as_metrics())
        rewarded = concatenate(groups)
        own_forward = self.rollout.vllm is None
        metrics.update(
            parity.measure(
                self.policy,
                rewarded,
                self.roles,
                self.settings,
                self.optim,
                self.dist,
                version,
                synced,
                own_forward,
            )
        )
        ready = time.perf_counter()
        metrics.update(time_sync=sync_end - started, time_parity=ready - scored)
        return Batch(items, episodes, unscored, groups, started=started, ready=ready, metrics=metrics)

    async def episodes(self, items: list[dict[str, Any]]) -> tuple[list[list[Episode]], list[int]]:
        """The step's episodes per question and the unscored counts (``Rollout.groups``; tests script it)."""
        return await self.rollout.groups(items)

    def updated(self, version: int) -> None:
        """Nothing to do: the next batch samples with the policy itself."""

    def close(self) -> None:
        """Nothing runs beside the learner."""
