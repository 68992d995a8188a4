"""Advantage arithmetic: plain tensor functions (the recipe picks an estimator by name in
``mara_bench.trainer.algorithms.estimators``).

* ``grpo`` -- group-normalised outcome rewards (GRPO; ``normalize_std=False`` is Dr.GRPO).
* ``broadcast`` -- a parent's scalar advantage spread over each child's own loss mask (MATPO's planner → workers).
* ``gae`` -- generalised advantage estimation over the unmasked tokens only (M-ASK's PPO with a shared critic).

Helpers: ``whiten`` (masked standardisation) and ``resample_to`` (MARS's balanced sampling of System-1 samples).
``GroupNorm`` is a recipe's GRPO normalisation and ``group_advantages`` applies it to a question's samples.
Shapes: ``B`` rows (samples), ``T`` tokens per row (right-padded), masks are 1 on tokens that take the loss.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from mara_bench.core.samples import Sample
from mara_bench.trainer.config import AlgorithmConfig


def grpo(
    rewards: Tensor | Sequence[float],
    group_keys: Sequence[Hashable],
    *,
    eps: float = 1e-6,
    unbiased: bool = True,
    normalize_std: bool = True,
) -> Tensor:
    """Group-relative advantages: ``(r - mean_g) / (std_g + eps)``, or ``r - mean_g`` when ``normalize_std=False``.

    rewards: ``(B,)`` one outcome reward per sample. group_keys: ``B`` hashables; rows with equal keys form a group
    (e.g. ``(question_id, role)`` to normalise per agent within a question, as MARS does per system).
    ``unbiased=True`` uses the ``n - 1`` standard deviation (verl's choice, with eps 1e-6); ``False`` divides by ``n``.

    Singleton policy: a group of one has no baseline to compare with, so its advantage is 0 (its std is taken
    as 0 rather than undefined); it contributes no policy gradient. Groups whose rewards are all equal get 0 too.
    Returns ``(B,)`` float32. A non-finite reward raises ValueError naming the rows.
    """
    values = torch.as_tensor(rewards, dtype=torch.float64).flatten()
    if len(group_keys) != values.numel():
        raise ValueError(
            f"grpo: got {values.numel()} rewards but {len(group_keys)} group keys; give one key per reward"
        )
    bad_rows = torch.nonzero(~torch.isfinite(values)).flatten().tolist()
    if bad_rows:
        raise ValueError(f"grpo: rewards at rows {bad_rows} are not finite; drop or re-score those samples")
    group_ids: dict[Hashable, int] = {}
    group_of_row = torch.tensor(
        [group_ids.setdefault(key, len(group_ids)) for key in group_keys], dtype=torch.long
    )
    n_groups = len(group_ids)
    counts = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, group_of_row, torch.ones_like(values))
    sums = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, group_of_row, values)
    centred = values - (sums / counts)[group_of_row]
    if not normalize_std:
        return centred.float()
    squares = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, group_of_row, centred.square())
    dof = counts - 1 if unbiased else counts
    std = torch.where(counts > 1, squares / dof.clamp(min=1), torch.zeros_like(squares)).sqrt()
    return (centred / (std[group_of_row] + eps)).float()


def broadcast(parent_advantages: Tensor, parent_index: Tensor | Sequence[int], child_masks: Tensor) -> Tensor:
    """Each child's tokens get its parent's scalar advantage, masked by the child's OWN loss mask (MATPO).

    parent_advantages: ``(P,)`` one scalar per parent rollout. parent_index: ``(C,)`` the parent row of each child.
    child_masks: ``(C, T)`` each child's loss mask. Returns ``(C, T)``: ``parent_advantages[parent_index[c]]``
    on child ``c``'s unmasked tokens, 0 elsewhere.
    """
    if parent_advantages.dim() != 1:
        raise ValueError(
            f"broadcast: parent_advantages must be (P,) scalars per parent, got {tuple(parent_advantages.shape)}"
        )
    index = torch.as_tensor(parent_index, dtype=torch.long).flatten()
    if child_masks.dim() != 2 or child_masks.shape[0] != index.numel():
        raise ValueError(
            f"broadcast: child_masks must be (C, T) with C = len(parent_index) = {index.numel()}, "
            f"got {tuple(child_masks.shape)}"
        )
    if index.numel() and (index.min() < 0 or index.max() >= parent_advantages.numel()):
        raise ValueError(
            f"broadcast: parent_index values must lie in [0, {parent_advantages.numel()}), got {index.tolist()}"
        )
    return parent_advantages[index].unsqueeze(-1) * child_masks.to(parent_advantages.dtype)


def whiten(x: Tensor, mask: Tensor, *, eps: float = 1e-8) -> Tensor:
    """Standardise ``x`` over its unmasked entries: ``(x - mean) / sqrt(var + eps)``, 0 on masked entries.

    x, mask: same shape. Mean and variance are taken over the unmasked entries only; the variance is the
    unbiased (``n - 1``) one, as verl's ``masked_whiten``. Needs at least 2 unmasked entries.
    """
    active = mask.bool()
    n = int(active.sum())
    if n < 2:
        raise ValueError(f"whiten: needs at least 2 unmasked entries to estimate a variance, got {n}")
    zeros = torch.zeros_like(x)
    mean = torch.where(active, x, zeros).sum() / n
    variance = torch.where(active, (x - mean).square(), zeros).sum() / (n - 1)
    return torch.where(active, (x - mean) * torch.rsqrt(variance + eps), zeros)


_whiten = whiten  # gae's ``whiten`` flag shadows the function inside gae


def gae(
    token_rewards: Tensor, values: Tensor, mask: Tensor, *, gamma: float, lam: float, whiten: bool = True
) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation over each row's unmasked tokens, right to left.

    token_rewards, values, mask: ``(B, T)``. Masked tokens (tool output, other agents' text, padding) are skipped:
    they neither advance the recursion nor receive credit, so discounting counts only unmasked steps; the value
    after a row's last unmasked token is 0. For consecutive unmasked steps ``t < t'``:
    ``delta_t = r_t + gamma * V_t' - V_t``; ``A_t = delta_t + gamma * lam * A_t'``.
    Returns ``(advantages, returns)`` both ``(B, T)`` and 0 on masked tokens; ``returns = A + V`` (before
    whitening); with ``whiten=True`` the advantages are then standardised over all unmasked tokens (see ``whiten``).
    A nonzero reward on a masked token raises ValueError (it would be silently lost): put rewards on model tokens.
    """
    if not (token_rewards.shape == values.shape == mask.shape) or token_rewards.dim() != 2:
        raise ValueError(
            "gae: token_rewards, values and mask must share one (B, T) shape, got "
            f"{tuple(token_rewards.shape)}, {tuple(values.shape)}, {tuple(mask.shape)}"
        )
    active = mask.bool()
    lost = (token_rewards != 0) & ~active
    if lost.any():
        raise ValueError(
            f"gae: nonzero rewards on masked tokens at (row, token) {torch.nonzero(lost).tolist()}"
        )
    rewards, values = token_rewards.detach(), values.detach()
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros_like(rewards[:, 0])
    next_advantage = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        advantage = delta + gamma * lam * next_advantage
        here = active[:, t]
        advantages[:, t] = torch.where(here, advantage, torch.zeros_like(advantage))
        next_value = torch.where(here, values[:, t], next_value)
        next_advantage = torch.where(here, advantage, next_advantage)
    returns = torch.where(active, advantages + values, torch.zeros_like(values))
    if whiten:
        advantages = _whiten(advantages, mask)
    return advantages, returns


def resample_to(
    indices: Tensor | Sequence[int], size: int, generator: torch.Generator | None = None
) -> Tensor:
    """MARS balanced sampling: choose exactly ``size`` of ``indices`` (advantages are computed BEFORE this).

    M = len(indices). M > size: a uniform random subset, without replacement. M < size: every index is kept
    ``size // M`` times and ``size % M`` distinct random ones once more ("random duplication"). M == size: the
    indices unchanged. Returns a ``(size,)`` long tensor of chosen entries of ``indices`` (in random order when
    M != size).
    """
    pool = torch.as_tensor(indices, dtype=torch.long).flatten()
    m = pool.numel()
    if size < 0:
        raise ValueError(f"resample_to: size must be >= 0, got {size}")
    if m == size:
        return pool.clone()
    if m == 0:
        raise ValueError(f"resample_to: cannot fill {size} samples from an empty set of indices")
    full_copies, extra = divmod(size, m)
    chosen = torch.cat([pool.repeat(full_copies), pool[torch.randperm(m, generator=generator)[:extra]]])
    return chosen[torch.randperm(size, generator=generator)]


@dataclass(frozen=True)
class GroupNorm:
    """How group-relative advantages are normalised (the ``algorithm.grpo_*`` settings)."""

    eps: float = 1e-6
    unbiased: bool = True
    normalize_std: bool = True

    @classmethod
    def of(cls, algo: AlgorithmConfig) -> GroupNorm:
        """The recipe's ``algorithm.grpo_*`` normalisation."""
        return cls(eps=algo.grpo_eps, unbiased=algo.grpo_unbiased_std, normalize_std=algo.grpo_normalize_std)


def group_advantages(samples: Sequence[Sample], norm: GroupNorm) -> Tensor:
    """``(len(samples),)`` GRPO advantages of the rows' rewards, normalised within each ``group_key`` under
    ``norm`` (``mara_bench.trainer.algorithms.advantages.grpo``)."""
    return grpo(
        [s.reward for s in samples],
        [s.group_key for s in samples],
        eps=norm.eps,
        unbiased=norm.unbiased,
        normalize_std=norm.normalize_std,
    )
