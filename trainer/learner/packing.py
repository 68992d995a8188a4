"""Token-budget micro-batching with little or no padding, and the forward pass that scores response tokens.

Three layouts, chosen by ``optim.batching``:

* ``bucket`` (fastest without a variable-length attention kernel, i.e. on CPU): rows sorted by length
  and cut into micro-batches whose padded size (rows x longest row) stays within ``token_budget`` and whose
  padding is at most ``max_padding`` of its token slots (a row joins while both hold: few, full micro-batches,
  as each costs a forward and a backward pass). Rows are right-padded and passed without an attention mask:
  under causal attention a real token attends only to the tokens before it, never to the padding after its
  row's end, so the mask would change nothing but the attention kernel (a causal one without a mask is
  faster, and no ``(rows, 1, W, W)`` mask is built).
* ``pack``: rows placed by first-fit decreasing into micro-batches of at most ``token_budget`` tokens, each ONE
  sequence with ``position_ids`` restarting at 0 per row and no attention mask -- transformers turns that into
  a block-diagonal causal mask (a varlen kernel with flash-attention), so no padding is computed at all. With
  a dense attention kernel the mask costs quadratic time in the packed length, hence not the CPU default.
* ``shared-prefix`` (the default): rows of one role and prompt (a GRPO group) compute their prompt once, then
  their suffixes on its KV cache (``mara_bench.trainer.learner.shared_prefix``); the other rows as ``bucket``.

Scores come back flat, one per response token, row after row (``split(batch.response_lengths)`` per row);
in every layout they equal the scores of each row run alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from mara_bench.core.samples import Sample
from mara_bench.harness.binpack import first_fit_decreasing
from mara_bench.trainer.learner.adapters import routed
from mara_bench.trainer.learner.shared_prefix import (
    SharedPrefix,
    lay_out_groups,
    model_inputs,
    plan_groups,
    shared_groups,
)

LAYOUTS = ("bucket", "pack", "shared-prefix")


def plan_packs(lengths: Sequence[int], token_budget: int) -> list[list[int]]:
    """Row indices per packed micro-batch: first-fit decreasing (MARS's packer); a row longer than the budget goes alone."""
    return [sorted(packed) for packed in first_fit_decreasing(lengths, token_budget)]


def plan_buckets(lengths: Sequence[int], token_budget: int, max_padding: float) -> list[list[int]]:
    """Row indices per padded micro-batch: longest first; a row joins the last micro-batch while its padded size
    stays within ``token_budget`` and its padding share within ``max_padding``, else it starts a new one."""
    buckets: list[list[int]] = []
    real = 0  # tokens of the last micro-batch's rows
    for row in sorted(range(len(lengths)), key=lambda r: -lengths[r]):
        if buckets:
            slots = (len(buckets[-1]) + 1) * lengths[buckets[-1][0]]
            if slots <= token_budget and real + lengths[row] >= (1 - max_padding) * slots:
                buckets[-1].append(row)
                real += lengths[row]
                continue
        buckets.append([row])
        real = lengths[row]
    return buckets


@dataclass
class MicroBatch:
    """Rows of one micro-batch laid out for one forward pass."""

    rows: list[int]
    """Indices of the samples in the batch they came from."""
    input_ids: Tensor
    """``(R, W)`` token ids: R padded rows, or R = 1 packed sequence (``shared-prefix``: the rows' suffixes)."""
    position_ids: Tensor
    """``(R, W)`` positions, restarting at 0 at every sample (``shared-prefix``: continuing after its prefix)."""
    score_index: Tensor
    """``(N,)`` flat indices into the ``R * W`` positions whose logits predict a response token, row by row."""
    targets: Tensor
    """``(N,)`` the response tokens those positions predict."""
    response_lengths: list[int]
    """Response length of each sample, in ``rows`` order."""
    real_tokens: int
    """Tokens that are not padding."""
    roles: list[str] = dataclasses.field(default_factory=list)
    """The role of each sample, in ``rows`` order (a policy with per-role adapters routes each row through its
    role's: ``mara_bench.trainer.learner.adapters.routed``)."""
    prefix: SharedPrefix | None = None
    """``shared-prefix``: the prefixes the rows continue, computed first; else ``None``."""

    @property
    def slots(self) -> int:
        """Token positions the model computes (real tokens + padding)."""
        return self.input_ids.numel() + (self.prefix.slots if self.prefix is not None else 0)


def _check_trainable(samples: Sequence[Sample], rows: list[int]) -> None:
    for row in rows:
        if not samples[row].prompt_ids or not samples[row].response_ids:
            raise ValueError(f"sample {row} needs a non-empty prompt and response to be trained on")


def lay_out(samples: Sequence[Sample], rows: list[int], layout: str) -> MicroBatch:
    """``samples[rows]`` as one micro-batch in ``layout`` (``bucket`` or ``pack``)."""
    _check_trainable(samples, rows)
    sequences = [samples[row].input_ids for row in rows]
    prompts = [len(samples[row].prompt_ids) for row in rows]
    responses = [len(samples[row].response_ids) for row in rows]
    if layout == "pack":
        starts, width = [sum(map(len, sequences[:i])) for i in range(len(rows))], sum(map(len, sequences))
        ids = [[t for seq in sequences for t in seq]]
        positions = [[p for seq in sequences for p in range(len(seq))]]
    else:  # right-padded: no mask needed under causal attention (module docstring)
        width = max(map(len, sequences))
        starts = [i * width for i in range(len(rows))]
        ids = [seq + [0] * (width - len(seq)) for seq in sequences]
        positions = [list(range(width)) for _ in sequences]
    score_index = [
        i
        for start, p, r in zip(starts, prompts, responses, strict=True)
        for i in range(start + p - 1, start + p + r - 1)
    ]
    return MicroBatch(
        rows=list(rows),
        input_ids=torch.tensor(ids),
        position_ids=torch.tensor(positions),
        score_index=torch.tensor(score_index),
        targets=torch.tensor([t for row in rows for t in samples[row].response_ids]),
        response_lengths=responses,
        real_tokens=sum(map(len, sequences)),
        roles=[samples[row].role for row in rows],
    )


def lay_out_shared(samples: Sequence[Sample], groups: list[list[int]]) -> MicroBatch:
    """``groups`` (rows of one role and prompt each) as one ``shared-prefix`` micro-batch."""
    rows = [row for group in groups for row in group]
    _check_trainable(samples, rows)
    ids, positions, prefix = lay_out_groups(samples, groups)
    width = ids.shape[1]
    responses = [len(samples[row].response_ids) for row in rows]
    return MicroBatch(
        rows=rows,
        input_ids=ids,
        position_ids=positions,
        score_index=torch.tensor([i * width + j for i, r in enumerate(responses) for j in range(r)]),
        targets=torch.tensor([t for row in rows for t in samples[row].response_ids]),
        response_lengths=responses,
        real_tokens=sum(len(samples[g[0]].prompt_ids) - 1 for g in groups) + sum(r + 1 for r in responses),
        roles=[samples[row].role for row in rows],
        prefix=prefix,
    )


def micro_batches(
    samples: Sequence[Sample], token_budget: int, layout: str = "bucket", max_padding: float = 0.1
) -> list[MicroBatch]:
    """Split ``samples`` into micro-batches of at most ``token_budget`` computed tokens (see the module docstring)."""
    if token_budget < 1:
        raise ValueError(f"optim.token_budget must be a positive number of tokens, got {token_budget}")
    if not 0 <= max_padding < 1:
        raise ValueError(f"optim.max_padding must be in [0, 1), got {max_padding}")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown micro-batch layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    shared: list[MicroBatch] = []
    rows = list(range(len(samples)))
    if layout == "shared-prefix":
        groups, rows = shared_groups(samples)
        shared = [lay_out_shared(samples, plan) for plan in plan_groups(samples, groups, token_budget)]
    lengths = [len(samples[row].input_ids) for row in rows]
    plans = (
        plan_packs(lengths, token_budget)
        if layout == "pack"
        else plan_buckets(lengths, token_budget, max_padding)
    )
    padded = "pack" if layout == "pack" else "bucket"
    return shared + [lay_out(samples, [rows[i] for i in plan], padded) for plan in plans]


def padding_share(batches: Sequence[MicroBatch]) -> float:
    """Share of computed token positions that are padding."""
    slots = sum(b.slots for b in batches)
    return 1 - sum(b.real_tokens for b in batches) / slots if slots else 0.0


def _forward(model, batch: MicroBatch):
    inputs = model_inputs(model, batch.input_ids, batch.position_ids, batch.prefix)
    with routed(model, batch.roles, len(batch.input_ids)):
        return model(**inputs)


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
