"""MATPO (arXiv:2510.04678, "Multi-Agent Tool-Integrated Policy Optimization" and the experimental setup):
planner/worker GRPO for ``mara_bench.harness.systems.matpo``, both roles in one model.

* Reward: MATPO's reward manager with workers (``SubagentToolRewardManager._call_include_subagent_tool``,
  mzf666/MATPO@3c41d62 ``verl/workers/reward_manager/subagent_tool.py``, weights 0.9 / 0.1 from its GRPO configs):
  ``0.9 * acc + 0.5 * (0.1 * fmt_planner + mean over the worker rollouts of 0.1 * fmt_worker)``; a rollout without
  any worker gets ``0.9 * acc + 0.1 * fmt_planner`` (its ``_call_only_main_agent``). ``acc`` is the task's outcome
  reward (the judge's 1/0); each ``fmt`` is MATPO's code's tool-format reward (``check_mcp_format``,
  ``mara_bench.trainer.methods.mcp_format``) over one agent's turns: the planner's, and each worker rollout's (its tool loop
  and final summary): the share of ``<use_mcp_tool>`` blocks (thinking included) that call a listed tool as its
  schema asks, 1.0 without any block. The schemas are the role's paper system prompt's (the tools are the same
  whichever prompt set the agent was shown). One difference: the released manager scores a whole batch at once,
  and when any rollout of the batch ran a worker, a rollout without workers gets ``0.5 * 0.1 * fmt_planner``
  (its worker mean is taken as 0); here each rollout is scored alone, as the manager scores a batch without
  workers.
* Samples: the planner's conversation is one sample (worker summaries are tool-response turns, out of its mask);
  each worker rollout (its tool loop and final summary) is one sample whose ``parent`` is its planner's row.
* Advantages (methodology: P(τ) factorises into the planner's and its workers' rollouts, so all share r(τ)):
  GRPO over the question's G planner rewards; each worker row gets its planner's SCALAR advantage on its OWN loss
  mask (``mara_bench.trainer.algorithms.advantages.broadcast``) -- not a copy of the planner's token tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.harness.prompts.sets import prompt_set
from mara_bench.harness.systems.matpo import PLANNER, WORKER
from mara_bench.harness.systems.outcomes import WorkerOutcome
from mara_bench.trainer.algorithms.advantages import GroupNorm, broadcast, group_advantages
from mara_bench.trainer.methods.base import (
    Method,
    concatenate,
    lead_then_helpers,
    question_id,
)
from mara_bench.trainer.methods.mcp_format import format_reward
from mara_bench.trainer.samples import samples_from_episode

ACC_WEIGHT, FMT_WEIGHT, WORKERS_SHARE = 0.9, 0.1, 0.5
"""MATPO's accuracy and tool-format weights, and the planner/worker split of the format term (module docstring)."""


def _agent_format(role: str, replies: list[str]) -> float:
    schemas = prompt_set("matpo", "paper").system_prompt(role) or ""
    return format_reward(schemas, replies)


def planner_format(episode: Episode) -> float:
    """MATPO's ``fmt`` of the planner: ``check_mcp_format`` over the planner's replies."""
    return _agent_format(PLANNER, [call.reply.text for call in episode.calls_by_role(PLANNER)])


def worker_formats(episode: Episode) -> list[float]:
    """MATPO's ``fmt`` of each worker rollout (its tool loop and summary), in the order the planner delegated."""
    rollouts: dict[int, list[str]] = {}
    for call in episode.calls_by_role(WORKER):
        rollouts.setdefault(WorkerOutcome.of(call.meta).subtask, []).append(call.reply.text)
    return [_agent_format(WORKER, replies) for _, replies in sorted(rollouts.items())]


def matpo_reward(accuracy: float, planner_fmt: float, worker_fmts: list[float]) -> float:
    """MATPO's reward from ``acc`` and the agents' ``fmt``, in its reward manager's order of operations (module
    docstring)."""
    planner = FMT_WEIGHT * planner_fmt
    if not worker_fmts:
        return ACC_WEIGHT * accuracy + planner
    workers = float(np.mean([FMT_WEIGHT * fmt for fmt in worker_fmts]))
    return ACC_WEIGHT * accuracy + WORKERS_SHARE * (planner + workers)


def rollout_reward(accuracy: float, episode: Episode) -> float:
    """MATPO's reward of one rollout (``matpo_reward`` over its planner's and workers' ``fmt``)."""
    return matpo_reward(accuracy, planner_format(episode), worker_formats(episode))


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
