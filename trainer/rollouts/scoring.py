"""Scoring: one step's episodes become the rows it trains on, with the step's reward and episode metrics.

The method turns each question's group of episodes into rewarded samples (``rewarded_samples``: the task's rewards,
the method's masks); ``algorithm.filter_zero_variance`` drops the rows of groups that teach nothing; when every
reward on every rank is finite, the method's own advantages are assigned per question; the rows of agents that are
not trained (``algorithm.marsrl.train_agents``) are left out. A non-finite reward anywhere skips the step's update.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.trainer.config import AlgorithmConfig
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.methods import GroupNorm, Method
from mara_bench.trainer.methods.base import Ratio
from mara_bench.trainer.step_record import (
    drop_zero_variance,
    group_rewards,
    keep_rows,
    zero_variance_keys,
)


def rewarded_groups(
    method: Method, task: Any, tokenizer: Any, items: list[dict[str, Any]], episodes: list[list[Episode]]
) -> list[list[Sample]]:
    """Each question's rewarded samples, as the method makes them (parents local to each question's list)."""
    return [
        method.rewarded_samples(item, group, task, tokenizer)
        for item, group in zip(items, episodes, strict=True)
    ]


def trained_agent(algo: AlgorithmConfig, frozen_roles: Collection[str] = ()) -> Callable[[Sample], bool]:
    """Whether a row's agent is trained: not a frozen role (``rollout.frozen_roles``, served by another model) and
    among ``algorithm.marsrl.train_agents`` (every agent when unset)."""
    agents = algo.marsrl.train_agents
    return lambda sample: sample.role not in frozen_roles and (agents is None or sample.role in agents)


@dataclass
class TrainingRows:
    """One rank's rows to train on, per question, and whether the step may update."""

    groups: list[list[Sample]]
    nonfinite: list[str]
    """The group keys of this rank's rows whose reward is not finite."""
    finite: bool
    """Every reward on every rank is finite (else the step's update is skipped)."""


def training_rows(
    groups: list[list[Sample]],
    method: Method,
    algo: AlgorithmConfig,
    dist: Distributed,
    frozen_roles: Collection[str] = (),
) -> TrainingRows:
    """The rows to train on: zero-variance groups dropped when asked, the method's own advantages when every
    reward is finite, untrained agents' (and frozen roles') rows left out."""
    if algo.filter_zero_variance:
        groups = [drop_zero_variance(group) for group in groups]
    nonfinite = [s.group_key for group in groups for s in group if not math.isfinite(s.reward)]
    finite = dist.sum([len(nonfinite)])[0] == 0
    if finite and method.advantages is not None:
        norm = GroupNorm.of(algo)  # a question whose every episode went unscored has no rows
        groups = [method.advantages(group, norm) if group else group for group in groups]
    trained = trained_agent(algo, frozen_roles)
    return TrainingRows([keep_rows(group, trained) for group in groups], nonfinite, finite)


def reward_metrics(dist: Distributed, samples: list[Sample]) -> dict[str, float]:
    """Mean and standard deviation of the step's finite rewards, over ranks."""
    finite = [s.reward for s in samples if math.isfinite(s.reward)]
    count, total, squares = dist.sum([len(finite), sum(finite), sum(r * r for r in finite)])
    mean = total / max(count, 1)
    return {"reward_mean": mean, "reward_std": math.sqrt(max(squares / max(count, 1) - mean * mean, 0.0))}


def episode_metrics(
    dist: Distributed,
    method: Method,
    items: list[dict[str, Any]],
    episodes: list[list[Episode]],
    unscored: list[int],
    groups: list[list[Sample]],
) -> dict[str, float]:
    """Tool calls per episode, unscored judgements, the share of zero-variance groups, and the method's own
    metrics, summed over ranks."""
    ratios = {
        "tool_calls_per_episode": (
            float(sum(len(e.tool_calls) for group in episodes for e in group)),
            float(sum(map(len, episodes))),
        ),
        "groups_zero_variance_frac": (
            float(sum(len(zero_variance_keys(group)) for group in groups)),
            float(sum(len(group_rewards(group)) for group in groups)),
        ),
    }
    if method.metrics is not None:
        ratios.update(method.metrics(items, episodes))
    return {"unscored": dist.sum([float(sum(unscored))])[0], **ratio_metrics(dist, ratios)}


def ratio_metrics(dist: Distributed, ratios: dict[str, Ratio]) -> dict[str, float]:
    """Each ``(numerator, denominator)`` summed over ranks, then divided; a 0 denominator reports nothing."""
    names = sorted(ratios)
    summed = dist.sum([part for name in names for part in ratios[name]])
    metrics = {}
    for index, name in enumerate(names):
        numerator, denominator = summed[2 * index : 2 * index + 2]
        if denominator:
            metrics[name] = numerator / denominator
    return metrics
