"""Policy-gradient losses: clipped surrogate, KL estimators, entropy and split-invariant loss aggregation.

Plain tensor functions, chosen by name from the recipe through ``mara_bench.trainer.registry.POLICY_LOSSES``
(``algorithm.policy_loss``), ``KL_ESTIMATORS`` (``algorithm.kl_kind``) and ``AGGREGATIONS``
(``algorithm.loss_mode``), each looked up with ``mara_bench.core.named``. Shapes: ``B`` rows (samples), ``T`` tokens
per row (right-padded), ``V`` vocabulary; masks are 1 on the tokens that take the loss.

Split invariance. ``aggregate`` divides by counts of the WHOLE batch when given (``global_tokens``: unmasked
tokens; ``global_rows``: rows with at least one unmasked token). Each micro-batch / data-parallel rank then
computes a partial loss and the partial losses ADD UP to the full-batch loss, exactly, and so do their gradients:
accumulate micro-batch gradients by summing (plain repeated ``backward``) and all-reduce gradients across ranks
with SUM (not mean; DDP/FSDP average, so scale by the world size there). Rows must not be split across parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch
from torch import Tensor

from mara_bench.core import named
from mara_bench.trainer import registry

LOG_RATIO_LIMIT = 20.0
"""Log-ratios are clamped to ±20 before ``exp`` so one wild token cannot overflow the loss (as verl does)."""

K3_LIMIT = 10.0
"""The k3 estimate is clamped to ±10 per token (verl's ``low_var_kl`` bound)."""


def loss_counts(mask: Tensor) -> tuple[int, int]:
    """``(tokens, rows)`` of a ``(B, T)`` mask: unmasked tokens, and rows with at least one of them.

    Compute these over the whole batch (summed over micro-batches and ranks) and pass them to ``aggregate`` /
    ``policy_loss`` as ``global_tokens`` / ``global_rows``.
    """
    active = mask.bool()
    return int(active.sum()), int(active.any(dim=-1).sum())


def _token_mean(
    row_sums: Tensor, row_tokens: Tensor, tokens: int, rows: int, norm_length: int | None
) -> Tensor:
    """Every token weighs the same: ``sum_i sum_t l_it / tokens`` (DAPO)."""
    return row_sums.sum() / tokens


def _seq_mean_token_mean(
    row_sums: Tensor, row_tokens: Tensor, tokens: int, rows: int, norm_length: int | None
) -> Tensor:
    """Every row weighs the same, its tokens averaged: ``sum_i (sum_t l_it / n_i) / rows`` (original GRPO)."""
    return (row_sums / row_tokens.clamp(min=1)).sum() / rows


def _seq_mean_token_sum(
    row_sums: Tensor, row_tokens: Tensor, tokens: int, rows: int, norm_length: int | None
) -> Tensor:
    """Rows averaged, tokens summed: ``sum_i sum_t l_it / rows``."""
    return row_sums.sum() / rows


def _seq_mean_token_sum_norm(
    row_sums: Tensor, row_tokens: Tensor, tokens: int, rows: int, norm_length: int | None
) -> Tensor:
    """Dr.GRPO as verl computes it: every token summed, divided by a CONSTANT length only:
    ``sum_i sum_t l_it / norm_length``.

    This is verl's ``agg_loss`` for this mode (``verl/trainer/ppo/core_algos.py`` at volcengine/verl@b178a3c:
    ``torch.sum(seq_losses) / loss_scale_factor``): there is NO division by the number of sequences, despite the
    "seq-mean" in the name, so a recipe ported from verl keeps its effective learning rate. ``norm_length`` plays
    the part of verl's ``loss_scale_factor`` (set it explicitly: verl's fallback, the padded width of the batch,
    is not constant). Split-invariant with no global count: the parts' sums add up.
    """
    if norm_length is None or norm_length <= 0:
        raise ValueError(
            "aggregate: mode 'seq-mean-token-sum-norm' needs norm_length > 0, a constant such as the maximum "
            f"response length (got {norm_length})"
        )
    return row_sums.sum() / norm_length


Aggregation = Callable[[Tensor, Tensor, int, int, int | None], Tensor]
"""``reduce(row_sums, row_tokens, tokens, rows, norm_length) -> loss``: one ``loss_mode``."""

AGGREGATIONS: dict[str, Aggregation] = {
    "token-mean": _token_mean,
    "seq-mean-token-mean": _seq_mean_token_mean,
    "seq-mean-token-sum": _seq_mean_token_sum,
    "seq-mean-token-sum-norm": _seq_mean_token_sum_norm,
}


def aggregate(
    loss_mat: Tensor,
    mask: Tensor,
    mode: str,
    *,
    global_tokens: int | None = None,
    global_rows: int | None = None,
    norm_length: int | None = None,
) -> Tensor:
    """Reduce a ``(B, T)`` per-token loss to a scalar over the unmasked tokens, by ``mode``.

    Modes: ``token-mean``, ``seq-mean-token-mean``, ``seq-mean-token-sum``, ``seq-mean-token-sum-norm`` (needs
    ``norm_length``). ``global_tokens`` / ``global_rows`` default to this batch's own counts (``loss_counts``);
    pass the whole batch's counts when this is one part of it (see the module docstring). Masked entries never
    reach the result, even when they hold inf/NaN. A batch with no unmasked token gives 0.
    """
    reduce = named.lookup(AGGREGATIONS, mode, "aggregation mode")
    if loss_mat.shape != mask.shape or loss_mat.dim() != 2:
        raise ValueError(
            f"aggregate: loss_mat and mask must share one (B, T) shape, got {tuple(loss_mat.shape)} and "
            f"{tuple(mask.shape)}"
        )
    for name, count in (("global_tokens", global_tokens), ("global_rows", global_rows)):
        if count is not None and count <= 0:
            raise ValueError(f"aggregate: {name} must be a positive count of the whole batch, got {count}")
    active = mask.bool()
    local_tokens, local_rows = loss_counts(mask)
    row_sums = torch.where(active, loss_mat, torch.zeros_like(loss_mat)).sum(dim=-1)
    row_tokens = active.sum(dim=-1).to(loss_mat.dtype)
    tokens = global_tokens if global_tokens is not None else max(local_tokens, 1)
    rows = global_rows if global_rows is not None else max(local_rows, 1)
    return reduce(row_sums, row_tokens, tokens, rows, norm_length)


def policy_loss(
    old_logprob: Tensor,
    logprob: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = 3.0,
    mode: str = "token-mean",
    global_tokens: int | None = None,
    global_rows: int | None = None,
    norm_length: int | None = None,
) -> tuple[Tensor, dict[str, Tensor]]:
    """PPO clipped surrogate with separate low/high clip ranges and dual clip; returns ``(loss, stats)``.

    old_logprob, logprob, mask: ``(B, T)``; advantages: ``(B,)`` one scalar per row (broadcast over its tokens)
    or ``(B, T)`` per token. With ``ratio = exp(logprob - old_logprob)`` the per-token loss is
    ``max(-A * ratio, -A * clip(ratio, 1 - clip_low, 1 + clip_high))``; for ``A < 0`` it is further capped at
    ``-A * dual_clip`` (dual clip, Ye et al. 2020; ``None`` disables it), so a huge ratio on a bad token cannot
    blow up the loss. Then ``aggregate(..., mode, global_tokens, global_rows, norm_length)``.

    stats (detached scalars): ``clip_frac_high`` (A > 0, ratio > 1 + clip_high), ``clip_frac_low`` (A < 0,
    ratio < 1 - clip_low), ``dual_clip_frac`` (A < 0, ratio > dual_clip), ``approx_kl`` (k3 estimate of
    KL(old || new): ``ratio - 1 - log ratio``), ``ratio_mean``. Each is a token sum divided by ``global_tokens``
    (or this batch's token count), so the parts' stats add up to the full batch's like the loss does.
    """
    if not (old_logprob.shape == logprob.shape == mask.shape):
        raise ValueError(
            "policy_loss: old_logprob, logprob and mask must share one (B, T) shape, got "
            f"{tuple(old_logprob.shape)}, {tuple(logprob.shape)}, {tuple(mask.shape)}"
        )
    if not (0 <= clip_low < 1 and clip_high >= 0):
        raise ValueError(
            f"policy_loss: need 0 <= clip_low < 1 and clip_high >= 0, got {clip_low}, {clip_high}"
        )
    if dual_clip is not None and dual_clip <= 1:
        raise ValueError(f"policy_loss: dual_clip must be > 1 (or None to disable), got {dual_clip}")
    if advantages.shape == mask.shape[:1]:
        advantages = advantages.unsqueeze(-1)
    elif advantages.shape != mask.shape:
        raise ValueError(
            f"policy_loss: advantages must be (B,) or (B, T) for mask {tuple(mask.shape)}, got {tuple(advantages.shape)}"
        )
    advantages = advantages.detach()
    log_ratio = (logprob - old_logprob.detach()).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip_low, 1 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    negative = advantages < 0
    if dual_clip is not None:
        per_token = torch.where(negative, torch.minimum(per_token, -advantages * dual_clip), per_token)
    loss = aggregate(
        per_token, mask, mode, global_tokens=global_tokens, global_rows=global_rows, norm_length=norm_length
    )

    active = mask.bool()
    tokens = global_tokens if global_tokens is not None else max(int(active.sum()), 1)
    with torch.no_grad():
        events = {
            "clip_frac_high": (advantages > 0) & (ratio > 1 + clip_high),
            "clip_frac_low": negative & (ratio < 1 - clip_low),
            "dual_clip_frac": negative & (ratio > dual_clip)
            if dual_clip is not None
            else torch.zeros_like(active),
            "approx_kl": ratio - 1 - log_ratio,
            "ratio_mean": ratio,
        }
        stats = {
            name: torch.where(active, value.to(ratio.dtype), torch.zeros_like(ratio)).sum() / tokens
            for name, value in events.items()
        }
    return loss, stats


class PolicyLoss(Protocol):
    """The one signature of a policy loss (``algorithm.policy_loss``): ``policy_loss``'s. It returns the loss and
    at least the stats ``clip_frac_high``, ``clip_frac_low`` and ``approx_kl``, each split-invariant as the loss."""

    def __call__(
        self,
        old_logprob: Tensor,
        logprob: Tensor,
        advantages: Tensor,
        mask: Tensor,
        *,
        clip_low: float,
        clip_high: float,
        dual_clip: float | None,
        mode: str,
        global_tokens: int | None,
        global_rows: int | None,
        norm_length: int | None,
    ) -> tuple[Tensor, dict[str, Tensor]]: ...


def get_policy_loss(name: str) -> PolicyLoss:
    """The policy loss registered as ``name``; an unknown name raises ``mara_bench.core.named``'s ValueError."""
    return named.lookup(registry.POLICY_LOSSES, name, "policy loss").load()


def _k1(log_ratio: Tensor) -> Tensor:
    return log_ratio


def _k2(log_ratio: Tensor) -> Tensor:
    return 0.5 * log_ratio.square()


def _k3(log_ratio: Tensor) -> Tensor:
    reverse = (-log_ratio).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    return (torch.exp(reverse) - reverse - 1).clamp(-K3_LIMIT, K3_LIMIT)


def _straight_through(value_of: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """The value of ``value_of`` with the gradient of k2 (which is the unbiased KL gradient, Schulman 2020)."""

    def estimate(log_ratio: Tensor) -> Tensor:
        surrogate = _k2(log_ratio)
        return value_of(log_ratio).detach() + surrogate - surrogate.detach()

    return estimate


KL_ESTIMATORS: dict[str, Callable[[Tensor], Tensor]] = {
    "k1": _k1,
    "abs": torch.abs,
    "k2": _k2,
    "k3": _k3,
    "k1+": _straight_through(_k1),
    "k3+": _straight_through(_k3),
}


def kl(logprob: Tensor, ref_logprob: Tensor, kind: str) -> Tensor:
    """Per-token estimate of KL(policy || reference) from sampled tokens' logprobs, ``(B, T)`` → ``(B, T)``.

    With ``d = logprob - ref_logprob``: ``k1 = d``; ``abs = |d|``; ``k2 = d² / 2``;
    ``k3 = exp(-d) + d - 1`` (non-negative, low variance; ``-d`` clamped to ±20 and the result to ±10 as verl);
    ``k1+`` / ``k3+`` have the VALUE of k1 / k3 and the GRADIENT of k2 (straight-through, verl's "+" kinds).
    The reference is treated as a constant (no gradient flows into ``ref_logprob``).
    """
    estimator = named.lookup(KL_ESTIMATORS, kind, "KL estimator")
    if logprob.shape != ref_logprob.shape:
        raise ValueError(
            f"kl: logprob {tuple(logprob.shape)} and ref_logprob {tuple(ref_logprob.shape)} differ"
        )
    return estimator(logprob - ref_logprob.detach())


def entropy(logits: Tensor) -> Tensor:
    """Entropy of the softmax over the last axis, ``(..., V)`` → ``(...)``: ``-sum p log p`` via ``log_softmax``.

    Numerically stable: large logits do not overflow, and ``-inf`` logits (banned tokens) contribute 0, not NaN.
    """
    log_probs = torch.log_softmax(logits, dim=-1)
    probs = log_probs.exp()
    return -torch.where(probs > 0, probs * log_probs, torch.zeros_like(probs)).sum(dim=-1)
