"""The RL training loop. One ``Trainer.train_step`` reads top to bottom:

1. rollout  -- each question's group of episodes (``trainer.rollout``: the harness system with the live policy
   as its ``Chat``, or the method's own rollout);
2. scoring  -- the method turns episodes into rewarded rows (``trainer.scoring``); a non-finite reward skips the
   step, reported; the policy that sampled scores the rows' generated tokens and the gap to the engine's logprobs
   is reported and checked (``trainer.parity``);
3. update   -- advantages, the loss over micro-batches and the optimizer step (``trainer.update``).

Checkpoints are ``trainer.run_state``'s. Sampling is reseeded from ``(seed, step, rank)`` at the start of every
step, so a resumed run draws exactly what an uninterrupted one would.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import torch

from harness.systems.types import Episode
from harness.toolcache.counts import counting
from trainer import parity, role_metrics, run_state
from trainer.config import TrainConfig
from trainer.distributed import Distributed
from trainer.estimators import advantage_estimator
from trainer.frozen_roles import RoutedChat
from trainer.heldout import check_heldout
from trainer.methods import concatenate, get_method
from trainer.models import load_models
from trainer.rollout import PromptOrder, Rollout, seed_step
from trainer.samples import Sample
from trainer.scoring import episode_metrics, reward_metrics, rewarded_groups, training_rows
from trainer.step_record import rollouts_path, split_rows, write_rollouts
from trainer.update import PolicyUpdate


class Trainer:
    """Policy, optional reference and critic, optimizer and data cursor for one run directory."""

    def __init__(self, config: TrainConfig, run_dir: str | Path, *, resume: bool = False):
        self.config = config
        self.run_dir = Path(run_dir)
        self.dist = Distributed.from_env(config.parallel)
        algo = config.algorithm
        self.method = get_method(algo.method).configured(config)
        if self.method.estimator not in (None, algo.advantage):
            raise ValueError(
                f"algorithm.method {self.method.name!r} needs algorithm.advantage {self.method.estimator!r}, "
                f"got {algo.advantage!r}"
            )
        self.device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
        if config.rollout.prompts_per_step < self.dist.world_size:
            raise ValueError(
                f"rollout.prompts_per_step ({config.rollout.prompts_per_step}) must be at least the number of "
                f"ranks ({self.dist.world_size}): every rank rolls out its own questions"
            )
        critic = advantage_estimator(algo.advantage).needs_critic
        models = load_models(config, self.run_dir, self.dist, self.device, critic=critic)
        self.tokenizer, self.policy = models.tokenizer, models.policy
        self.reference, self.critic = models.reference, models.critic
        self.rollout = Rollout.build(config, self.method, models, self.dist.rank)
        check_heldout(self.task, config.eval.every)
        self.roles = list(self.rollout.system.roles)
        """The system's own role names: the ``role/<role>/...`` metrics of every step, in this order."""
        self.updater = PolicyUpdate(
            config, self.dist, self.method, self.roles, self.policy, self.reference, self.critic
        )
        self.prompts = PromptOrder(len(self.task.items), config.seed)
        self.step = 0
        self.last_samples: list[Sample] = []
        """The rows the last step trained on, with their rewards and advantages (for tests and inspection)."""
        self.last_rewarded: list[Sample] = []
        """Every row the last step's episodes made, before ``filter_zero_variance`` (the rows it dropped carry
        no advantage): what the policy earned, which the trained rows alone overstate."""
        self.pipeline = None
        """MarsRL's pipelined / segmented rollouts (``trainer.pipelined``) when the recipe asks for them."""
        if config.algorithm.marsrl.pipeline or config.rollout.segment_tokens is not None:
            from trainer.pipelined import Pipeline

            self.pipeline = Pipeline(self)
        if resume:
            self.resume()

    @property
    def task(self) -> Any:
        """The task the questions, rewards and (for a benchmark) run inputs come from."""
        return self.rollout.task

    def train_step(self) -> dict[str, float]:
        """Run one rollout-and-update step; returns its metrics (``skipped`` = 1 when no update was made)."""
        if self.pipeline is not None:  # rollout runs beside training: the step takes what has been released
            return self.pipeline.train_step()
        seed_step(self.config.seed, self.step, self.dist.rank)
        started = time.perf_counter()
        indices = self.prompts.take(self.config.rollout.prompts_per_step)
        items = [self.task.items[i] for i in self.dist.shard(indices)]
        self.policy.eval()
        with self.dist.gathered(self.policy):
            synced = self.rollout.sync(self.policy)
            with counting() as cache_counts:
                episodes, unscored = asyncio.run(self._rollout(items))
        rolled = time.perf_counter()
        groups = rewarded_groups(self.method, self.task, self.tokenizer, items, episodes)
        scored = time.perf_counter()
        metrics = reward_metrics(self.dist, concatenate(groups))
        if isinstance(self.rollout.chat, RoutedChat):
            metrics.update(self.rollout.chat.take_served())
        metrics.update(episode_metrics(self.dist, self.method, items, episodes, unscored, groups))
        if self.rollout.toolbox.cache is not None:  # this rank's tool-cache hits, misses, records, live calls
            metrics.update(cache_counts.as_metrics())
        rewarded = concatenate(groups)
        metrics.update(
            parity.measure(
                self.policy,
                rewarded,
                self.roles,
                self.config.rollout,
                self.config.optim,
                self.dist,
                self.step,
                synced,
            )
        )
        rows = training_rows(
            groups, self.method, self.config.algorithm, self.dist, self.config.rollout.frozen_roles
        )
        samples = concatenate(rows.groups)
        if rows.finite:
            metrics.update(self.updater(samples, self.step))  # sets the rows' GRPO / GAE advantages in place
        else:
            metrics.update(skipped=1.0)
            print(
                f"step {self.step}: non-finite reward for questions {sorted(set(rows.nonfinite))}; step skipped"
            )
        self.last_samples = samples
        self.last_rewarded = rewarded
        role_sums = self.dist.sum(role_metrics.sample_sums(samples, self.roles))
        metrics.update(role_metrics.sample_metrics(role_sums, self.roles))
        finished = time.perf_counter()
        tokens = self.dist.sum([sum(len(s.input_ids) for s in samples)])[0]
        metrics.update(
            step=float(self.step),
            tokens=tokens,
            tokens_per_s=tokens / (finished - started),
            time_rollout=rolled - started,
            time_scoring=scored - rolled,
            time_update=finished - scored,
            time_step=finished - started,
            lr=self.updater.scheduler.get_last_lr()[0],
        )
        trained = split_rows(samples, [len(group) for group in rows.groups])
        write_rollouts(
            rollouts_path(self.run_dir, self.step, self.dist.rank),
            self.step,
            items,
            episodes,
            trained,
            unscored,
        )
        self.step += 1
        return metrics

    async def _rollout(self, items: list[dict[str, Any]]) -> tuple[list[list[Episode]], list[int]]:
        """The step's episodes per question and the unscored counts (``Rollout.groups``; tests script it)."""
        return await self.rollout.groups(items)

    def state_dict(self) -> dict[str, Any]:
        """Whole (unsharded) states; a collective when FSDP-sharded, so every rank calls it."""
        return run_state.trainer_state(self)

    def save(self) -> None:
        """Checkpoint and export the current step (every rank gathers the state; rank 0 writes)."""
        run_state.save_step(self)

    def resume(self) -> bool:
        """Load the latest checkpoint of the run directory; False when there is none."""
        return run_state.resume_latest(self)
