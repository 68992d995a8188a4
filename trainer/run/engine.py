"""The RL training loop. ``Trainer.fit`` runs the recipe's steps (cold start, held-out evaluations, metrics,
checkpoints); one ``Trainer.train_step`` reads top to bottom:

1. samples  -- a batch of rewarded rows from the run's ``SampleSource`` (``mara_bench.trainer.rollouts.sources``):
   the synchronous rollout (``mara_bench.trainer.rollouts.rollout``: the harness system with the live policy as its
   ``Chat``, or the method's own rollout, rewarded by ``mara_bench.trainer.rollouts.scoring``), or MarsRL's pipelined /
   segmented rollouts (``mara_bench.trainer.rollouts.pipelined``);
2. rows     -- zero-variance groups dropped when asked, the method's advantages, untrained agents left out; a
   non-finite reward skips the update, reported;
3. update   -- the loss over micro-batches and the optimizer step (``mara_bench.trainer.learner.update``), then the step's
   metrics, built here for every source.

Checkpoints are ``mara_bench.trainer.run.run_state``'s; the cold start is ``mara_bench.trainer.run.warmup``'s.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch

from mara_bench.core.samples import Sample
from mara_bench.harness.redaction import redact_record
from mara_bench.trainer.algorithms.estimators import advantage_estimator
from mara_bench.trainer.config import TrainConfig, to_dict
from mara_bench.trainer.learner import role_metrics
from mara_bench.trainer.learner.adapters import RoleAdapters
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.learner.models import load_models
from mara_bench.trainer.learner.update import PolicyUpdate
from mara_bench.trainer.methods import concatenate, get_method
from mara_bench.trainer.rollouts.rollout import PromptOrder, Rollout
from mara_bench.trainer.rollouts.scoring import episode_metrics, reward_metrics, training_rows
from mara_bench.trainer.rollouts.sources import Batch, RolloutSource, SampleSource
from mara_bench.trainer.run.heldout import Evaluation, check_heldout
from mara_bench.trainer.run.run_state import RunState, resume_latest, save_step, state_dict
from mara_bench.trainer.run.warmup import Demos, WarmupStep, warm_up
from mara_bench.trainer.step_record import rollouts_path, split_rows, write_rollouts

logger = logging.getLogger(__name__)


class Trainer:
    """Policy, optional reference and critic, optimizer and data cursor for one run directory."""

    def __init__(self, config: TrainConfig, run_dir: str | Path, *, resume: bool = False):
        self.config = config
        self.run_dir = Path(run_dir)
        self.dist = Distributed.from_env(config.parallel)
        algo = config.algorithm
        self.method = get_method(algo.method).configured(algo)
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
        plan = adapter_plan(config)
        self.models = load_models(
            config.model,
            self.run_dir,
            self.dist,
            self.device,
            seed=config.seed,
            reference=algo.kl_coef > 0,
            critic=critic,
            adapters=plan,
        )
        self.tokenizer, self.policy = self.models.tokenizer, self.models.policy
        self.reference, self.critic = self.models.reference, self.models.critic
        own_rollout = (  # the method's own rollout (MarsRL's grouped one) under the recipe, if it has one
            self.method.rollout(algo, config.task, config.rollout)
            if self.method.rollout is not None
            else None
        )
        self.rollout = Rollout.build(
            config.task,
            config.rollout,
            self.models,
            seed=config.seed * 1_009 + self.dist.rank,
            steps=config.steps,
            own_rollout=own_rollout,
            lora=config.model.lora,
            scratch=self.run_dir / "scratch" / f"rank{self.dist.rank}" / "vllm-adapters",
        )
        check_heldout(self.task, config.eval.every)
        self.roles = list(self.rollout.system.roles)
        """The system's own role names: the ``role/<role>/...`` metrics of every step, in this order."""
        adapters = self.models.adapters
        self.untrained_roles = set(config.rollout.frozen_roles) | (
            adapters.frozen_roles if adapters else set()
        )
        """Roles whose rows are not trained on: served by another model, or through a frozen adapter."""
        self.updater = PolicyUpdate(
            algo,
            config.optim,
            config.rollout,
            self.dist,
            self.method,
            self.roles,
            self.policy,
            self.reference,
            self.critic,
        )
        self.prompts = PromptOrder(len(self.task.items), config.seed)
        self.state = RunState(config, self.dist, self.models, self.updater, self.prompts)
        """What a checkpoint saves and a resumed run loads."""
        self.demos = Demos(self.rollout, self.method, self.tokenizer, config.warmup)
        """The cold start's demonstrations."""
        self.evaluation = Evaluation(
            config.eval,
            config.seed,
            self.dist,
            self.rollout,
            self.method,
            self.policy,
            worked_roles=frozenset(config.warmup.demo_work),
        )
        """The held-out evaluation of the policy."""
        self.step = 0
        self.last_samples: list[Sample] = []
        """The rows the last step trained on, with their rewards and advantages (for tests and inspection)."""
        self.last_rewarded: list[Sample] = []
        """Every row the last step's episodes made, before ``filter_zero_variance`` (the rows it dropped carry
        no advantage): what the policy earned, which the trained rows alone overstate."""
        self.source: SampleSource = self._source()
        if resume:
            self.resume()

    def _source(self) -> SampleSource:
        """MarsRL's pipelined / segmented rollouts when the recipe asks for them, else the synchronous
        rollout."""
        config = self.config
        if config.algorithm.marsrl.pipeline or config.rollout.segment_tokens is not None:
            from mara_bench.trainer.rollouts.pipelined import Pipeline

            return Pipeline(
                config.algorithm.marsrl,
                config.rollout,
                config.seed,
                self.rollout,
                self.policy,
                self.tokenizer,
                self.prompts,
                self.dist.world_size,
            )
        return RolloutSource(
            config.rollout,
            config.optim,
            config.seed,
            self.rollout,
            self.method,
            self.policy,
            self.prompts,
            self.dist,
        )

    @property
    def task(self) -> Any:
        """The task the questions, rewards and (for a benchmark) run inputs come from."""
        return self.rollout.task

    def fit(self) -> None:
        """Train to ``config.steps``: on a fresh run the cold start (``mara_bench.trainer.run.warmup``) and a held-out
        evaluation logged as step -1, then the steps with held-out evaluations every ``eval.every`` steps and
        at the end (``mara_bench.trainer.run.heldout``), each step's metrics to ``<run>/metrics.jsonl``
        (``mara_bench.trainer.run.metrics``), checkpoints every ``save_every`` steps and at the end; then the curves."""
        from tqdm import tqdm

        from mara_bench.trainer.run.heldout import heldout_metrics, heldout_table, summary_line
        from mara_bench.trainer.run.metrics import MetricsLog, plot_curves

        config, run_dir, main_rank = self.config, self.run_dir, self.dist.is_main
        log = MetricsLog(run_dir, first_step=self.step) if main_rank else None
        every = config.eval.every
        first: dict[str, float] = {}
        if self.step == 0:
            self.warm_up()
            if every:  # the cold start's skill: the "before" of every held-out figure, logged as step -1
                first = heldout_metrics(self.evaluation)
                if log is not None:
                    log.write(-1, first)
                    logger.info("held-out after the cold start: %s", summary_line(first))
        if main_rank:
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "config.json").write_text(json.dumps(redact_record(to_dict(config)), indent=2))
        bar = tqdm(total=config.steps, initial=self.step, desc="train", disable=not main_rank)
        last: dict[str, float] = {}
        while self.step < config.steps:
            metrics = self.train_step()
            if every and (self.step % every == 0 or self.step == config.steps):
                last = heldout_metrics(self.evaluation)
                metrics.update(last)
                logger.info("held-out after step %d: %s", self.step - 1, summary_line(last))
            if log is not None:
                log.write(self.step - 1, metrics)
            bar.set_postfix(
                reward=f"{metrics['reward_mean']:.3f}", loss=f"{metrics.get('loss', float('nan')):.4f}"
            )
            bar.update(1)
            if config.save_every and self.step % config.save_every == 0 and self.step < config.steps:
                self.save()
        bar.close()
        self.save()
        if log is not None:
            log.close()
            if first and last:
                logger.info(heldout_table(first, last))
            curves = plot_curves(run_dir)
            export = run_dir / "exports" / f"step_{self.step}"
            logger.info("run directory: %s  (export: %s, curves: %s)", run_dir, export, curves)

    def train_step(self) -> dict[str, float]:
        """Train on the source's next batch; returns the step's metrics (``skipped`` = 1 when no update was
        made)."""
        version = self.step
        batch = self.source.next_batch(version)
        rewarded = concatenate(batch.groups)
        metrics = reward_metrics(self.dist, rewarded)
        metrics.update(batch.metrics)
        metrics.update(
            episode_metrics(self.dist, self.method, batch.items, batch.episodes, batch.unscored, batch.groups)
        )
        rows = training_rows(
            batch.groups, self.method, self.config.algorithm, self.dist, self.untrained_roles
        )
        samples = concatenate(rows.groups)
        staleness = [version - s.policy_version for s in samples if s.policy_version is not None]
        if batch.staleness_bound is not None and max(staleness, default=0) > batch.staleness_bound:
            raise RuntimeError(f"staleness {max(staleness)} above algorithm.marsrl.max_staleness")
        if rows.finite:
            metrics.update(self.updater(samples, version, behaviour=batch.behaviour))  # sets the advantages
        else:
            metrics.update(skipped=1.0)
            logger.warning(
                "step %d: non-finite reward for questions %s; step skipped",
                version,
                sorted(set(rows.nonfinite)),
            )
        self.source.updated(version + 1)
        self.last_samples = samples
        self.last_rewarded = rewarded
        metrics.update(self._step_metrics(batch, samples, staleness))
        if batch.per_question:
            trained = split_rows(samples, [len(group) for group in rows.groups])
            path = rollouts_path(self.run_dir, version, self.dist.rank)
            write_rollouts(path, version, batch.items, batch.episodes, trained, batch.unscored)
        self.step += 1
        if self.step >= self.config.steps:
            self.source.close()
        return metrics

    def _step_metrics(self, batch: Batch, samples: list[Sample], staleness: list[int]) -> dict[str, float]:
        """Per-role sums, tokens and rows trained, their staleness, the learning rate and the step's times."""
        role_sums = self.dist.sum(role_metrics.sample_sums(samples, self.roles))
        metrics = role_metrics.sample_metrics(role_sums, self.roles)
        finished = time.perf_counter()
        elapsed = finished - batch.started
        tokens, rows = self.dist.sum([sum(len(s.input_ids) for s in samples), len(samples)])
        per_role = self.dist.sum([sum(s.role == role for s in samples) for role in self.roles])
        metrics.update(
            {f"samples/{role}": float(count) for role, count in zip(self.roles, per_role, strict=True)}
        )
        metrics.update(
            step=float(self.step),
            tokens=tokens,
            tokens_per_s=tokens / elapsed,
            samples=float(rows),
            samples_per_s=rows / elapsed,
            staleness_mean=sum(staleness) / len(staleness) if staleness else 0.0,
            staleness_max=float(max(staleness, default=0)),
            time_update=finished - batch.ready,
            time_step=elapsed,
            lr=self.updater.scheduler.get_last_lr()[0],
        )
        return metrics

    def warm_up(self) -> list[WarmupStep]:
        """The cold start on this run's demonstrations (``mara_bench.trainer.run.warmup.warm_up``)."""
        config = self.config
        return warm_up(
            self.demos,
            self.models,
            config.warmup,
            config.optim,
            self.run_dir,
            seed=config.seed,
            gamma=config.algorithm.gamma,
            write=self.dist.is_main,
        )

    def state_dict(self) -> dict[str, Any]:
        """Whole (unsharded) states; a collective when FSDP-sharded, so every rank calls it."""
        return state_dict(self.state)

    def save(self) -> None:
        """Checkpoint and export the current step (every rank gathers the state; rank 0 writes)."""
        save_step(self.state, self.run_dir, self.step)

    def resume(self) -> bool:
        """Load the latest checkpoint of the run directory; False when there is none."""
        step = resume_latest(self.state, self.run_dir)
        if step is None:
            return False
        self.step = step
        return True


def adapter_plan(config: TrainConfig) -> RoleAdapters | None:
    """Under ``model.lora``: the adapter of each of the system's roles and its learning rate (the recipe's
    ``roles``, ``optim.lr`` for a role that sets none); ``None`` for full weights."""
    if config.model.lora is None:
        return None
    from mara_bench.harness.systems import SYSTEMS

    return RoleAdapters.plan(SYSTEMS[config.task.system].roles, config.roles, config.optim.lr)
