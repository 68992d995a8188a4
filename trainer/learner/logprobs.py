"""Response-token logprobs and entropies from a causal LM, computed in chunks, never as full-vocabulary tensors.

The training forward needs, for each of the ``N`` response tokens of a micro-batch, the log-probability of the
token (at the sampling temperature) and -- when the entropy bonus or the entropy metric asks -- the entropy of
the next-token distribution. Computing the model's logits for every position (prompts and padding included) in
fp32 and then ``log_softmax`` over them keeps several ``(positions, V)`` fp32 tensors alive for the backward
pass; at a real vocabulary (150k) that is gigabytes per micro-batch.

Here (``response_scores``) the output head computes no logits in the forward pass: a pre-hook on it takes the
final hidden states of the positions that predict response tokens, ``(N, H)``, and ``ChunkedLogprobs``
applies the head to those rows ``chunk_rows`` at a time: each chunk's ``(C, V)`` logits
exist in fp32 only while that chunk is reduced to its ``N`` logprobs / entropies, and the backward pass
recomputes them chunk by chunk (a fused linear + log-softmax, as Liger's fused linear cross-entropy does).
Only the ``(N, H)`` hidden rows and ``(N,)`` statistics are kept for backward.

Gradients, with ``z = (h W^T + b) / T``, ``p = softmax(z)``, ``H = -sum p log p``:
``d logp_t / dz = onehot(t) - p`` and ``dH / dz = -p * (log p + H)``.

Final-logit soft-capping (Gemma 2 and 3: ``l -> c * tanh(l / c)`` after the head, ``c`` the config's
``final_logit_softcapping``) is applied to each chunk, ``z = c * tanh((h W^T + b) / c) / T``, with
``dz / d(h W^T + b) = (1 - tanh^2) / T``; the model's own soft-capping is switched off for the scoring forward
(its output there is the scores, not logits). The head is the model's ``get_output_embeddings()`` (a
``Linear``); a model that rescales its logits otherwise (a logit scale as Cohere) is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from mara_bench.trainer.learner.adapters import routed
from mara_bench.trainer.learner.shared_prefix import model_inputs

CHUNK_BYTES = 64 * 2**20
"""fp32 bytes of one chunk's ``(C, V)`` logits (64 MiB: about 110 rows at a 150k vocabulary, 512 at 32k); the
forward and backward passes hold two such tensors at a time."""


@dataclass
class TokenScores:
    """Per response token, flat (row after row): logprob, and entropy when asked for (else ``None``)."""

    logprobs: Tensor
    entropy: Tensor | None


def chunk_rows(vocab_size: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Rows per chunk so that one chunk's fp32 logits take at most ``chunk_bytes`` (at least one row)."""
    return max(1, chunk_bytes // (4 * vocab_size))


def _chunk_logits(
    hidden: Tensor, weight: Tensor, bias: Tensor | None, temperature: float, softcap: float | None
) -> Tensor:
    """The chunk's fp32 logits, soft-capped when ``softcap`` is set, divided by ``temperature``."""
    logits = torch.nn.functional.linear(hidden, weight, bias).float()
    if softcap is not None:
        return logits.div_(softcap).tanh_().mul_(softcap / temperature)
    return logits.div_(temperature) if temperature != 1.0 else logits


class ChunkedLogprobs(torch.autograd.Function):
    """``(logprobs, entropy)`` of ``targets`` under ``linear(hidden, weight, bias) / temperature`` (soft-capped
    first when ``softcap`` is set), chunked.

    ``entropy`` is an empty tensor when ``with_entropy`` is false. See the module docstring for the gradients.
    """

    @staticmethod
    def forward(
        ctx: Any,
        hidden: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        targets: Tensor,
        temperature: float,
        rows: int,
        with_entropy: bool,
        softcap: float | None,
    ) -> tuple[Tensor, Tensor]:
        count = hidden.shape[0]
        logprobs = hidden.new_empty(count, dtype=torch.float32)
        lse = hidden.new_empty(count, dtype=torch.float32)
        entropy = hidden.new_empty(count if with_entropy else 0, dtype=torch.float32)
        for start in range(0, count, rows):  # two (C, V) fp32 tensors at most: log-probs, probs
            part = slice(start, start + rows)
            log_probs = _chunk_logits(hidden[part], weight, bias, temperature, softcap)
            lse[part] = torch.logsumexp(log_probs, dim=-1)
            log_probs -= lse[part, None]
            logprobs[part] = log_probs.gather(-1, targets[part, None])[:, 0]
            if with_entropy:
                entropy[part] = -(log_probs.exp()[:, None, :] @ log_probs[:, :, None])[:, 0, 0]
        ctx.save_for_backward(hidden, weight, bias, targets, lse, entropy)
        ctx.temperature, ctx.rows, ctx.with_entropy, ctx.softcap = temperature, rows, with_entropy, softcap
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(lse)
        return logprobs, entropy

    @staticmethod
    def backward(ctx: Any, grad_logprobs: Tensor | None, grad_entropy: Tensor | None):
        hidden, weight, bias, targets, lse, entropy = ctx.saved_tensors
        if not ctx.with_entropy:
            grad_entropy = None
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_hidden = torch.zeros_like(hidden) if need_hidden else None
        grad_weight = torch.zeros_like(weight, dtype=torch.float32) if need_weight else None
        grad_bias = torch.zeros_like(bias, dtype=torch.float32) if need_bias else None
        if grad_logprobs is None and grad_entropy is None:
            return grad_hidden, _cast(grad_weight, weight), _cast(grad_bias, bias), *[None] * 5
        for start in range(0, hidden.shape[0], ctx.rows):
            part = slice(start, start + ctx.rows)
            # two (C, V) fp32 tensors at most (three with a soft-cap): the gradient with respect to the logits is
            # built in place
            log_probs = _chunk_logits(hidden[part], weight, bias, ctx.temperature, ctx.softcap)
            # d capped / d logits = 1 - tanh^2, tanh = capped * T / c, read before log_probs is overwritten
            cap_slope = None
            if ctx.softcap is not None:
                cap_slope = torch.mul(log_probs, ctx.temperature / ctx.softcap).square_().neg_().add_(1)
            log_probs -= lse[part, None]
            probs = log_probs.exp()
            grad_logits = log_probs  # dz = p * (-g_lp - g_H * (log p + H)), then + g_lp at the target
            if grad_entropy is not None:
                grad_logits.add_(entropy[part, None]).mul_(-grad_entropy[part].float()[:, None])
            else:
                grad_logits.zero_()
            if grad_logprobs is not None:
                grad = grad_logprobs[part].float()
                grad_logits.sub_(grad[:, None])
            grad_logits.mul_(probs)
            del probs
            if grad_logprobs is not None:
                grad_logits.scatter_add_(-1, targets[part, None], grad[:, None])
            if ctx.temperature != 1.0:
                grad_logits /= ctx.temperature
            if cap_slope is not None:
                grad_logits.mul_(cap_slope)
                del cap_slope
            if grad_hidden is not None:
                grad_hidden[part] = grad_logits.to(weight.dtype) @ weight
            if grad_weight is not None:
                grad_weight += grad_logits.T.to(hidden.dtype) @ hidden[part]
            if grad_bias is not None:
                grad_bias += grad_logits.sum(0)
        return grad_hidden, _cast(grad_weight, weight), _cast(grad_bias, bias), *[None] * 5


def _cast(grad: Tensor | None, like: Tensor | None) -> Tensor | None:
    return grad.to(like.dtype) if grad is not None and like is not None else None


def score_hidden(
    head: torch.nn.Module,
    hidden: Tensor,
    targets: Tensor,
    temperature: float = 1.0,
    *,
    with_entropy: bool = False,
    chunk_bytes: int = CHUNK_BYTES,
    softcap: float | None = None,
) -> TokenScores:
    """Logprobs (and entropies) of ``targets`` ``(N,)`` under ``head(hidden) / temperature``, ``hidden`` ``(N, H)``
    (the head's output soft-capped to ``softcap * tanh(logits / softcap)`` first when ``softcap`` is set)."""
    if not isinstance(head, torch.nn.Linear):
        raise TypeError(f"the model's output head is a {type(head).__name__}, not a Linear layer")
    targets = targets.to(hidden.device)
    logprobs, entropy = ChunkedLogprobs.apply(
        hidden,
        head.weight,
        head.bias,
        targets,
        temperature,
        chunk_rows(head.weight.shape[0], chunk_bytes),
        with_entropy,
        softcap,
    )
    return TokenScores(logprobs, entropy if with_entropy else None)


SOFTCAP = "final_logit_softcapping"


def _configs(model: torch.nn.Module) -> list[Any]:
    """The model's config and, for a multimodal model, its text config (either may carry the head's settings)."""
    config = getattr(model, "config", None)
    text = getattr(config, "get_text_config", lambda: config)()
    if config is None:
        return []
    return [config] if text is None or text is config else [config, text]


def head_softcap(model: torch.nn.Module) -> float | None:
    """The model's final-logit soft-cap (``None`` without one); a logit scale after the head is refused."""
    configs = _configs(model)
    if any(getattr(config, "logit_scale", None) for config in configs):
        raise ValueError("the chunked scorer does not support models whose logits are rescaled (logit_scale)")
    caps = {float(cap) for config in configs if (cap := getattr(config, SOFTCAP, None))}
    if len(caps) > 1:
        raise ValueError(f"the model's configs disagree on {SOFTCAP}: {sorted(caps)}")
    return caps.pop() if caps else None


@contextmanager
def _model_softcap_off(model: torch.nn.Module, softcap: float | None) -> Iterator[None]:
    """Switch the model's own soft-capping off while its head outputs scores (``score_hidden`` applies the cap)."""
    if softcap is None:
        yield
        return
    capped = [config for config in _configs(model) if getattr(config, SOFTCAP, None)]
    for config in capped:
        setattr(config, SOFTCAP, None)
    try:
        yield
    finally:
        for config in capped:
            setattr(config, SOFTCAP, softcap)


def response_scores(
    model: torch.nn.Module,
    batch: Any,
    temperature: float = 1.0,
    *,
    with_entropy: bool = False,
    chunk_bytes: int = CHUNK_BYTES,
) -> TokenScores:
    """Logprobs (and entropies) of ``batch``'s response tokens (``batch`` is a
    ``mara_bench.trainer.learner.packing.MicroBatch``) under ``model`` at ``temperature``, flat, row after row
    (``split(batch.response_lengths)`` per row).

    One forward pass in which the output head computes no logits: a pre-hook takes the final hidden states at
    ``batch.score_index`` and gives the head an empty input, and a hook on the head's output replaces it with
    ``score_hidden``'s result (so the scores are computed inside the model's forward and are its output, as
    FSDP needs: the head's parameters are gathered there, and the backward pass enters through the output).
    A ``shared-prefix`` batch's prefix forward runs first, before the hooks (its head computes one position).
    """
    softcap = head_softcap(model)
    head = model.get_output_embeddings()
    taken: list[Tensor] = []

    def take_hidden(module: torch.nn.Module, args: tuple) -> tuple:
        hidden = args[0]
        taken.append(hidden.flatten(0, 1)[batch.score_index.to(hidden.device)])
        return (hidden[:, :0], *args[1:])

    def score(module: torch.nn.Module, args: tuple, output: Tensor) -> Tensor:
        scores = score_hidden(
            module,
            taken.pop(),
            batch.targets,
            temperature,
            with_entropy=with_entropy,
            chunk_bytes=chunk_bytes,
            softcap=softcap,
        )
        return torch.stack([scores.logprobs, *([scores.entropy] if with_entropy else [])], dim=-1)[None]

    inputs = model_inputs(model, batch.input_ids, batch.position_ids, batch.prefix)  # before the hooks
    hooks = [head.register_forward_pre_hook(take_hidden), head.register_forward_hook(score)]
    try:
        with _model_softcap_off(model, softcap), routed(model, batch.roles, len(batch.input_ids)):
            packed = model(**inputs).logits
    finally:
        for hook in hooks:
            hook.remove()
    expected = (1, len(batch.targets), 2 if with_entropy else 1)
    if tuple(packed.shape) != expected:
        raise RuntimeError(
            f"the model reshaped its head's output to {tuple(packed.shape)}, expected {expected}"
        )
    return TokenScores(packed[0, :, 0], packed[0, :, 1] if with_entropy else None)
