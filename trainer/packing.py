"""Token-budget micro-batching with little or no padding, and the forward pass that scores response tokens.

Two layouts, chosen by ``optim.batching``:

* ``bucket`` (default; fastest without a variable-length attention kernel, i.e. on CPU): rows sorted by length
  and cut into micro-batches whose padded size (rows x longest row) stays within ``token_budget``; a row joins
  a micro-batch only if it is at least ``1 - max_padding`` of the micro-batch's longest row, so padding is at
  most ``max_padding`` of every micro-batch's token slots.
* ``pack``: rows placed by first-fit decreasing into micro-batches of at most ``token_budget`` tokens, each ONE
  sequence with ``position_ids`` restarting at 0 per row and no attention mask -- transformers turns that into
  a block-diagonal causal mask (a varlen kernel with flash-attention), so no padding is computed at all. With
  a dense attention kernel the mask costs quadratic time in the packed length, hence not the CPU default.

Scores come back flat, one per response token, row after row (``split(batch.response_lengths)`` per row);
in both layouts they equal the scores of each row run alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from harness.binpack import first_fit_decreasing
from trainer.samples import Sample

LAYOUTS = ("bucket", "pack")


def plan_packs(lengths: Sequence[int], token_budget: int) -> list[list[int]]:
    """Row indices per packed micro-batch: first-fit decreasing (MARS's packer); a row longer than the budget goes alone."""
    return [sorted(packed) for packed in first_fit_decreasing(lengths, token_budget)]


def plan_buckets(lengths: Sequence[int], token_budget: int, max_padding: float) -> list[list[int]]:
    """Row indices per padded micro-batch: longest first; a new one starts when the budget or padding bound is hit."""
    buckets: list[list[int]] = []
    for row in sorted(range(len(lengths)), key=lambda r: -lengths[r]):
        if buckets:
            width = lengths[buckets[-1][0]]
            fits = (len(buckets[-1]) + 1) * width <= token_budget
            if fits and lengths[row] >= (1 - max_padding) * width:
                buckets[-1].append(row)
                continue
        buckets.append([row])
    return buckets


@dataclass
class MicroBatch:
    """Rows of one micro-batch laid out for one forward pass."""

    rows: list[int]
    """Indices of the samples in the batch they came from."""
    input_ids: Tensor
    """``(R, W)`` token ids: R padded rows, or R = 1 packed sequence."""
    position_ids: Tensor
    """``(R, W)`` positions, restarting at 0 at every sample."""
    attention_mask: Tensor | None
    """``(R, W)`` 1 on real tokens for the bucket layout; ``None`` when packed."""
    score_index: Tensor
    """``(N,)`` flat indices into the ``R * W`` positions whose logits predict a response token, row by row."""
    targets: Tensor
    """``(N,)`` the response tokens those positions predict."""
    response_lengths: list[int]
    """Response length of each sample, in ``rows`` order."""
    real_tokens: int
    """Tokens that are not padding."""

    @property
    def slots(self) -> int:
        """Token positions the model computes (real tokens + padding)."""
        return self.input_ids.numel()


def lay_out(samples: Sequence[Sample], rows: list[int], layout: str) -> MicroBatch:
    """``samples[rows]`` as one micro-batch in ``layout`` (``bucket`` or ``pack``)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown micro-batch layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    for row in rows:
        if not samples[row].prompt_ids or not samples[row].response_ids:
            raise ValueError(f"sample {row} needs a non-empty prompt and response to be trained on")
    sequences = [samples[row].input_ids for row in rows]
    prompts = [len(samples[row].prompt_ids) for row in rows]
    responses = [len(samples[row].response_ids) for row in rows]
    if layout == "pack":
        starts, width = [sum(map(len, sequences[:i])) for i in range(len(rows))], sum(map(len, sequences))
        ids = [[t for seq in sequences for t in seq]]
        positions = [[p for seq in sequences for p in range(len(seq))]]
        attention = None
    else:
        width = max(map(len, sequences))
        starts = [i * width for i in range(len(rows))]
        ids = [seq + [0] * (width - len(seq)) for seq in sequences]
        positions = [list(range(width)) for _ in sequences]
        attention = torch.tensor([[1] * len(seq) + [0] * (width - len(seq)) for seq in sequences])
    score_index = [
        i
        for start, p, r in zip(starts, prompts, responses, strict=True)
        for i in range(start + p - 1, start + p + r - 1)
    ]
    return MicroBatch(
        rows=list(rows),
        input_ids=torch.tensor(ids),
        position_ids=torch.tensor(positions),
        attention_mask=attention,
        score_index=torch.tensor(score_index),
        targets=torch.tensor([t for row in rows for t in samples[row].response_ids]),
        response_lengths=responses,
        real_tokens=sum(map(len, sequences)),
    )


def micro_batches(
    samples: Sequence[Sample], token_budget: int, layout: str = "bucket", max_padding: float = 0.1
) -> list[MicroBatch]:
    """Split ``samples`` into micro-batches of at most ``token_budget`` computed tokens (see the module docstring)."""
    if token_budget < 1:
        raise ValueError(f"optim.token_budget must be a positive number of tokens, got {token_budget}")
    if not 0 <= max_padding < 1:
        raise ValueError(f"optim.max_padding must be in [0, 1), got {max_padding}")
    lengths = [len(s.input_ids) for s in samples]
    plans = (
        plan_packs(lengths, token_budget)
        if layout == "pack"
        else plan_buckets(lengths, token_budget, max_padding)
    )
    return [lay_out(samples, plan, layout) for plan in plans]


def padding_share(batches: Sequence[MicroBatch]) -> float:
    """Share of computed token positions that are padding."""
    slots = sum(b.slots for b in batches)
    return 1 - sum(b.real_tokens for b in batches) / slots if slots else 0.0


def _forward(model, batch: MicroBatch):
    device = next(model.parameters()).device
    mask = batch.attention_mask.to(device) if batch.attention_mask is not None else None
    return model(
        input_ids=batch.input_ids.to(device),
        position_ids=batch.position_ids.to(device),
        attention_mask=mask,
        use_cache=False,
    )


def response_logits(model, batch: MicroBatch, temperature: float = 1.0) -> Tensor:
    """``(N, V)`` the model's logits (divided by ``temperature``) at the positions that predict response tokens."""
    logits = _forward(model, batch).logits
    return logits.flatten(0, 1)[batch.score_index.to(logits.device)].float() / temperature


def token_logprobs(logits: Tensor, targets: Tensor) -> Tensor:
    """``(N,)`` log-probability of each target token under ``(N, V)`` logits."""
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.to(logits.device)[:, None])[:, 0]


def response_values(critic, batch: MicroBatch) -> Tensor:
    """``(N,)`` a token-classification critic's value of the state before each response token."""
    logits = _forward(critic, batch).logits
    return logits.flatten(0, 1)[batch.score_index.to(logits.device), 0].float()
