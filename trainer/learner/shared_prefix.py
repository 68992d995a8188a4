"""The ``shared-prefix`` micro-batch layout: rows that share their prompt compute it once.

In a GRPO-style step the rows of a group share their prompt token for token, yet a padded micro-batch computes
that prompt once per row, forward and backward. Here rows are grouped by role and prompt, and a micro-batch of
groups is two forward passes: the groups' prefixes (each group's prompt minus its last token), one row per group,
with a KV cache; then that cache indexed to the rows (row ``r`` reads its group's) and the rows' suffixes (the
last prompt token and the response, right-padded) with positions continuing after their prefix. The suffix
forward scores the response tokens as a padded row would (the last prompt token predicts the first response
token), and its backward flows through the cache into the prefix forward: the gradient is the same sum as the
rows' own. Rows whose group spares fewer than ``MIN_SAVED_TOKENS`` are laid out as ``bucket`` lays them out.

The groups' prefixes are right-padded to the longest; when their lengths differ, an attention mask hides the
cache columns a shorter prefix padded (the suffixes' own padding sits after their real tokens and needs none,
as in ``bucket``).

It needs a forward that carries a KV cache with gradients; ``fallback_reason`` says when the update lays rows
out as ``bucket`` instead: a cache other than full-attention dynamic layers, activation checkpointing
(transformers drops the cache under it), a critic (a token-classification head takes no cache), FSDP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from mara_bench.core.samples import Sample
from mara_bench.harness.providers.kv_slots import cache_keyword, returned_cache, unmergeable_cache_reason
from mara_bench.trainer.learner.adapters import routed


@dataclass
class SharedPrefix:
    """The groups' prefixes of one micro-batch, computed once per group before its rows' suffixes."""

    input_ids: Tensor
    """``(G, P)`` each group's prefix, right-padded to the longest."""
    group_of_row: Tensor
    """``(R,)`` the group (row of ``input_ids``) each suffix row continues."""
    mask: Tensor | None
    """``(R, P + W)`` the suffix forward's attention mask over cache and suffix columns, 0 at the padding of a
    shorter prefix; ``None`` when every prefix has the same length."""
    roles: list[str]
    """Each group's role (its rows' adapter)."""

    @property
    def slots(self) -> int:
        """Token positions the prefix forward computes."""
        return self.input_ids.numel()


MIN_SAVED_TOKENS = 32
"""A group shares its prefix when that spares at least this many token positions (rows - 1 times the prefix's
length): below it the second forward pass costs more than it spares (docs/experiments/trainer-throughput.md)."""


def shared_groups(samples: Sequence[Sample]) -> tuple[list[list[int]], list[int]]:
    """The rows grouped by role and prompt: the groups worth sharing a prefix (``MIN_SAVED_TOKENS``), longest
    response first, and the other rows."""
    grouped: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for row, sample in enumerate(samples):
        grouped.setdefault((sample.role, tuple(sample.prompt_ids)), []).append(row)
    groups, alone = [], []
    for (_, prompt), rows in grouped.items():
        if (len(rows) - 1) * (len(prompt) - 1) >= MIN_SAVED_TOKENS:
            groups.append(sorted(rows, key=lambda r: -len(samples[r].response_ids)))
        else:
            alone += rows
    return groups, sorted(alone)


def plan_groups(
    samples: Sequence[Sample], groups: list[list[int]], token_budget: int
) -> list[list[list[int]]]:
    """Per micro-batch, its groups' rows: groups by prefix length, longest first, a micro-batch taking groups
    while its prefix and suffix slots stay within ``token_budget``; a group too large for the budget is cut into
    parts that each compute the prefix."""
    suffix = {row: len(samples[row].response_ids) + 1 for group in groups for row in group}
    parts = [
        part
        for rows in sorted(groups, key=lambda rows: -len(samples[rows[0]].prompt_ids))
        for part in _cut(rows, suffix, len(samples[rows[0]].prompt_ids) - 1, token_budget)
    ]
    batches: list[list[list[int]]] = []
    for part in parts:
        if batches and _slots([*batches[-1], part], samples, suffix) <= token_budget:
            batches[-1].append(part)
        else:
            batches.append([part])
    return batches


def _cut(rows: list[int], suffix: dict[int, int], prefix: int, token_budget: int) -> list[list[int]]:
    """``rows`` (longest suffix first) in parts of at most ``token_budget`` slots (at least one row each)."""
    parts: list[list[int]] = []
    for row in rows:
        if parts and prefix + (len(parts[-1]) + 1) * suffix[parts[-1][0]] <= token_budget:
            parts[-1].append(row)
        else:
            parts.append([row])
    return parts


def _slots(groups: list[list[int]], samples: Sequence[Sample], suffix: dict[int, int]) -> int:
    prefix = max(len(samples[g[0]].prompt_ids) - 1 for g in groups)
    rows = [row for group in groups for row in group]
    return len(groups) * prefix + len(rows) * max(suffix[row] for row in rows)


def lay_out_groups(samples: Sequence[Sample], groups: list[list[int]]) -> tuple[Tensor, Tensor, SharedPrefix]:
    """The suffixes ``(R, W)`` of ``groups``' rows (group after group), their positions, and the prefixes."""
    prefixes = [samples[group[0]].prompt_ids[:-1] for group in groups]
    rows = [row for group in groups for row in group]
    group_of_row = [g for g, group in enumerate(groups) for _ in group]
    suffixes = [samples[row].input_ids[len(samples[row].prompt_ids) - 1 :] for row in rows]
    width, longest = max(map(len, suffixes)), max(map(len, prefixes))
    starts = [len(prefixes[g]) for g in group_of_row]
    mask = None
    if any(len(p) != longest for p in prefixes):
        mask = torch.ones(len(rows), longest + width, dtype=torch.long)
        for row, start in enumerate(starts):
            mask[row, start:longest] = 0
    prefix = SharedPrefix(
        input_ids=torch.tensor([p + [0] * (longest - len(p)) for p in prefixes]),
        group_of_row=torch.tensor(group_of_row),
        mask=mask,
        roles=[samples[group[0]].role for group in groups],
    )
    ids = torch.tensor([s + [0] * (width - len(s)) for s in suffixes])
    positions = torch.tensor(starts)[:, None] + torch.arange(width)[None, :]
    return ids, positions, prefix


def fallback_reason(model: Any, *, critic: Any = None, sharded: bool = False) -> str | None:
    """Why rows trained on ``model`` (with ``critic``, under FSDP when ``sharded``) cannot share prefixes, or
    ``None`` when they can."""
    if critic is not None:
        return "a critic's value head takes no KV cache"
    if sharded:
        return "the models are FSDP-sharded"
    if _checkpointed(model):
        return "activation checkpointing drops the KV cache in training forwards"
    return unmergeable_cache_reason(model)


def layout_for(
    batching: str, model: Any, *, critic: Any = None, sharded: bool = False
) -> tuple[str, str | None]:
    """The layout rows trained on ``model`` take under ``optim.batching``, and why it is not ``shared-prefix``
    where that was asked for and cannot apply (``fallback_reason``; ``None`` otherwise)."""
    reason = fallback_reason(model, critic=critic, sharded=sharded) if batching == "shared-prefix" else None
    return ("bucket" if reason is not None else batching), reason


def _checkpointed(model: Any) -> bool:
    """Activation checkpointing is on, under either of transformers' names for it (``models.py``)."""
    named = "is_activation_checkpointing" if hasattr(model, "is_activation_checkpointing") else None
    return bool(getattr(model, named or "is_gradient_checkpointing", False))


def model_inputs(
    model: Any, input_ids: Tensor, position_ids: Tensor, prefix: SharedPrefix | None
) -> dict[str, Any]:
    """The keyword arguments of ``model``'s forward over ``input_ids``: with ``prefix``, its forward runs first
    (routed through its groups' adapters) and its KV cache, one row per suffix row, rides along."""
    device = next(model.parameters()).device
    inputs: dict[str, Any] = {"input_ids": input_ids.to(device), "position_ids": position_ids.to(device)}
    if prefix is None:
        return {**inputs, "use_cache": False}
    ids = prefix.input_ids.to(device)
    positions = torch.arange(ids.shape[1], device=device).expand_as(ids)
    with routed(model, prefix.roles, len(ids)):
        cache = returned_cache(model(input_ids=ids, position_ids=positions, use_cache=True, logits_to_keep=1))
    cache.batch_select_indices(prefix.group_of_row.to(device))
    if prefix.mask is not None:
        inputs["attention_mask"] = prefix.mask.to(device)
    return {**inputs, cache_keyword(model): cache, "use_cache": True}
