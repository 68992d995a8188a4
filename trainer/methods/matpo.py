"""MATPO (arXiv:2510.04678, "Multi-Agent Tool-Integrated Policy Optimization" and the experimental setup):
planner/worker GRPO for ``harness.systems.matpo``, both roles in one model.

* Reward (experimental setup): ``0.9 * acc + 0.1 * fmt`` per rollout. ``acc`` is the task's outcome reward (the
  judge's 1/0); ``fmt`` is MATPO's code's tool-format reward (``check_mcp_format``, mzf666/MATPO@3c41d62,
  ``trainer.methods.mcp_format``) over the planner's turns -- the rollout MATPO rewards, its workers taking its
  advantage: the share of ``<use_mcp_tool>`` blocks (thinking included) that call a listed tool as its schema
  asks, 1.0 without any block. The schemas are the paper's planner system prompt's (the tools are the same
  whichever prompt set the planner was shown).
* Samples: the planner's conversation is one sample (worker summaries are tool-response turns, out of its mask);
  each worker rollout (its tool loop and final summary) is one sample whose ``parent`` is its planner's row.
* Advantages (methodology: P(τ) factorises into the planner's and its workers' rollouts, so all share r(τ)):
  GRPO over the question's G planner rewards; each worker row gets its planner's SCALAR advantage on its OWN loss
  mask (``trainer.algorithms.advantages.broadcast``) -- not a copy of the planner's token tensor.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from harness.prompts.sets import prompt_set
from harness.systems.matpo import PLANNER, WORKER
from harness.systems.types import Episode
from trainer.algorithms.advantages import broadcast
from trainer.methods.base import (
    GroupNorm,
    Method,
    concatenate,
    group_advantages,
    lead_then_helpers,
    question_id,
)
from trainer.methods.mcp_format import format_reward
from trainer.rollouts.samples import Sample, samples_from_episode

ACC_WEIGHT, FMT_WEIGHT = 0.9, 0.1
"""reward = 0.9 * acc + 0.1 * fmt (experimental setup)."""


def format_score(episode: Episode) -> float:
    """MATPO's ``fmt`` of the rollout: ``check_mcp_format`` over the planner's replies (module docstring)."""
    schemas = prompt_set("matpo", "paper").system_prompt(PLANNER) or ""
    return format_reward(schemas, [call.reply.text for call in episode.calls_by_role(PLANNER)])


def rollout_reward(accuracy: float, episode: Episode) -> float:
    """``0.9 * acc + 0.1 * fmt``."""
    return ACC_WEIGHT * accuracy + FMT_WEIGHT * format_score(episode)


def rollout_samples(item: dict[str, Any], episode: Episode, reward: float, tokenizer: Any) -> list[Sample]:
    """The planner's sample first, then its workers' samples (parent 0), all with the rollout reward."""
    samples = samples_from_episode(episode, tokenizer, group_key=question_id(item), reward=reward)
    return lead_then_helpers(samples, PLANNER, WORKER, system="matpo")


def rewarded_samples(
    item: dict[str, Any], episodes: list[Episode], task: Any, tokenizer: Any
) -> list[Sample]:
    return concatenate(
        [
            rollout_samples(
                item, episode, rollout_reward(float(task.reward(item, episode)), episode), tokenizer
            )
            for episode in episodes
        ]
    )


def advantages(samples: list[Sample], norm: GroupNorm) -> list[Sample]:
    """GRPO over the planner rows; the planner's scalar broadcast over each worker's own mask."""
    planners = [i for i, s in enumerate(samples) if s.role == PLANNER]
    planner_advantages = group_advantages([samples[i] for i in planners], norm)
    for i, advantage in zip(planners, planner_advantages.tolist(), strict=True):
        samples[i].advantage = advantage
    workers = [s for s in samples if s.role == WORKER]
    if workers:
        row_of = {sample_index: row for row, sample_index in enumerate(planners)}
        masks = pad_sequence(
            [torch.tensor(s.loss_mask, dtype=torch.float32) for s in workers], batch_first=True
        )
        spread = broadcast(planner_advantages, [row_of[s.parent] for s in workers], masks)
        for row, sample in enumerate(workers):
            sample.advantage = spread[row, : len(sample.loss_mask)].tolist()
    return samples


METHOD = Method(name="matpo", rewarded_samples=rewarded_samples, estimator="grpo", advantages=advantages)
