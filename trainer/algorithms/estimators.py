"""Advantage estimators by name: ``algorithm.advantage`` in a recipe picks one from
``mara_bench.trainer.registry.ADVANTAGE_ESTIMATORS``.

Every estimator has one signature, ``estimate(batch: AdvantageBatch) -> TokenAdvantages``: the update's rows in
micro-batch order, their loss masks and, for an estimator that ``needs_critic``, the critic's values; it returns each
row's per-token advantages (0 off its mask) and, for a critic, the returns it regresses on. It also records each
row's advantage on the ``Sample`` (the step's dump shows it). The engine loads a critic exactly when the chosen
estimator needs one.

* ``grpo`` -- group-normalised outcome rewards over each ``group_key``
  (``mara_bench.trainer.algorithms.advantages.grpo``), broadcast over the row's trained tokens; a method that assigns its
  own advantages per question (MARS's per-system groups and balanced sampling, MATPO's planner-to-worker
  broadcast) keeps them;
* ``gae`` -- PPO's generalised advantage estimation with a critic, the row's reward on its last trained token
  (M-ASK's shared critic), standardised over the step's trained tokens unless ``algorithm.gae_whiten`` is false.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from mara_bench.core.named import lookup
from mara_bench.core.samples import Sample
from mara_bench.trainer import registry
from mara_bench.trainer.algorithms.advantages import GroupNorm, gae, group_advantages
from mara_bench.trainer.config import AlgorithmConfig


@dataclass(frozen=True)
class AdvantageBatch:
    """What an estimator reads: one update's rows (in micro-batch order) and the recipe's settings."""

    samples: list[Sample]
    masks: list[Tensor]
    """Each row's loss mask, float ``(T_i,)``."""
    values: list[Tensor] | None
    """The critic's value of each row's response tokens (only for an estimator that needs a critic)."""
    algo: AlgorithmConfig
    method_assigned: bool
    """The training method already set every row's advantage, per question (``Method.advantages``)."""


@dataclass(frozen=True)
class TokenAdvantages:
    """An estimator's answer, one entry per row of the batch."""

    advantages: list[Tensor]
    """Per-token advantages ``(T_i,)``, 0 off the row's loss mask."""
    returns: list[Tensor] | None
    """The value targets of a critic (``None`` without one)."""


@dataclass(frozen=True)
class AdvantageEstimator:
    """A registered estimator (see the module docstring)."""

    name: str
    estimate: Callable[[AdvantageBatch], TokenAdvantages]
    needs_critic: bool = False


def grpo_advantages(batch: AdvantageBatch) -> TokenAdvantages:
    """``grpo``: group-normalised outcome rewards (or the method's own), broadcast over the trained tokens."""
    if not batch.method_assigned:
        scalars = group_advantages(batch.samples, GroupNorm.of(batch.algo))
        for sample, scalar in zip(batch.samples, scalars.tolist(), strict=True):
            sample.advantage = scalar
    advantages = [torch.as_tensor(sample.advantage, dtype=torch.float32) for sample in batch.samples]
    return TokenAdvantages([a * mask for a, mask in zip(advantages, batch.masks, strict=True)], None)


def gae_advantages(batch: AdvantageBatch) -> TokenAdvantages:
    """``gae``: PPO's generalised advantage estimation from the critic's values."""
    if batch.values is None:
        raise ValueError("the gae estimator needs the critic's values")
    if not batch.samples:  # every row filtered out (``filter_zero_variance``): the update skips the step
        return TokenAdvantages([], [])
    mask = pad_sequence(batch.masks, batch_first=True)
    last = (mask * torch.arange(1, mask.shape[1] + 1)).argmax(dim=1)
    token_rewards = torch.zeros_like(mask)
    token_rewards[torch.arange(len(batch.samples)), last] = torch.tensor([s.reward for s in batch.samples])
    values = pad_sequence(batch.values, batch_first=True).cpu()
    advantages, returns = gae(
        token_rewards, values, mask, gamma=batch.algo.gamma, lam=batch.algo.lam, whiten=batch.algo.gae_whiten
    )
    lengths = [len(m) for m in batch.masks]
    for row, (sample, length) in enumerate(zip(batch.samples, lengths, strict=True)):
        sample.advantage = advantages[row, :length].tolist()
    return TokenAdvantages(
        [advantages[row, :length] for row, length in enumerate(lengths)],
        [returns[row, :length] for row, length in enumerate(lengths)],
    )


def advantage_estimator(name: str) -> AdvantageEstimator:
    """The estimator registered as ``name``; an unknown name raises ``mara_bench.core.named``'s ValueError."""
    entry = lookup(registry.ADVANTAGE_ESTIMATORS, name, "advantage estimator")
    return AdvantageEstimator(name, entry.load(), entry.needs_critic)
