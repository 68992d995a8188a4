"""Batched text generation with per-row sampling settings on a live ``transformers`` causal LM.

This is the generation core shared by the ``local/`` Inspect provider and the trainer's rollout engine::

    from mara_bench.harness.chat_template import render_prompt
    from mara_bench.harness.providers.generation import generate
    from mara_bench.harness.providers.sampling import Sampling

    prompt = render_prompt(tokenizer, [{"role": "user", "content": "2+2?"}])
    [done] = generate(model, tokenizer, [prompt], Sampling(max_tokens=64, temperature=0.6, top_p=0.95, seed=1))
    done.text, done.finish_reason, done.prompt_ids, done.response_ids, done.logprobs

* ``DecodeBatch`` is the decode engine: a running batch over one KV cache that rows join between steps and
  leave as soon as they finish; ``generate`` runs one batch of prompts through it to the end, and the
  ``local/`` provider's continuous scheduler (``mara_bench.harness.providers.scheduler``) feeds it requests as they come.
* Every row of a batch has its own ``Sampling`` (``mara_bench.harness.providers.sampling``), so unrelated requests share one
  forward pass; a seeded row gives the same tokens alone or in any batch.
* ``logprobs[i]`` is the log-probability of ``response_ids[i]`` under the model's *unmodified* next-token
  distribution (temperature 1, no top-p/top-k): what a forward pass over prompt + response gives.
* ``response_ids`` holds every sampled token, the end-of-sequence token included; ``text`` is the decoded
  completion without special tokens, cut before the first stop string (as vLLM and OpenAI report it).
* A row whose ``Sampling`` names a LoRA ``adapter`` decodes through it; rows of different adapters of one peft
  model share a forward pass (``mara_bench.harness.providers.adapter_rows``), each as it would decode alone.
* ``finish_reason`` is ``"stop"`` (end-of-sequence token or stop string) or ``"length"`` (``max_tokens`` reached,
  or the model's context ``max_model_len`` reached -- the row is then cut at the context end, never silently).
  A prompt that leaves no room for a single new token raises ``PromptTooLongError``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from mara_bench.harness.providers.adapter_rows import BASE, active_adapter, adapter_rows
from mara_bench.harness.providers.kv_slots import OwnCache, SlotCache, cache_keyword, returned_cache
from mara_bench.harness.providers.sampling import (
    Sampling,
    choose_tokens,
    ends_with_stop,
    final_text,
    row_generator,
    stop_token_ids,
)
from mara_bench.harness.providers.trace import RecentSizes


class PromptTooLongError(ValueError):
    """A prompt does not fit the model's context window."""


@dataclass
class Completion:
    """One generated completion with its token-level record."""

    text: str
    finish_reason: Literal["stop", "length"]
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    """Per-token logprobs of ``response_ids`` under the unmodified model distribution."""
    top_logprobs: list[list[tuple[int, float]]] | None = None
    """For each response position, the ``top_logprobs`` most likely ``(token_id, logprob)`` pairs, if asked."""
    tempered_logprobs: list[float] | None = None
    """Per-token logprobs of ``response_ids`` at the row's sampling temperature (before any top-p / top-k cut;
    temperature 1 for greedy rows), if asked (``tempered_logprobs=True``): what a trainer scoring at its sampling
    temperature computes."""


def context_length(model: Any) -> int:
    """The model's context window (``max_position_embeddings`` of its config)."""
    return int(getattr(model.config, "max_position_embeddings", 0) or 2**31)


def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Sequence[int]],
    sampling: Sampling | Sequence[Sampling],
    *,
    max_model_len: int | None = None,
    top_logprobs: int | Sequence[int] = 0,
    tempered_logprobs: bool = False,
) -> list[Completion]:
    """Complete each prompt (token ids) with its own sampling settings, as one ``DecodeBatch`` (rows leave it as
    they finish).

    ``sampling`` is one setting for every row or one per row, and so is ``top_logprobs``. ``max_model_len``
    defaults to the model's context window. Returns one ``Completion`` per prompt, in order.
    """
    rows = len(prompts)
    settings = [sampling] * rows if isinstance(sampling, Sampling) else list(sampling)
    if len(settings) != rows:
        raise ValueError(f"got {rows} prompts but {len(settings)} sampling settings")
    tops = [top_logprobs] * rows if isinstance(top_logprobs, int) else list(top_logprobs)
    if len(tops) != rows:
        raise ValueError(f"got {rows} prompts but {len(tops)} top_logprobs counts")
    if rows == 0:
        return []
    batch = DecodeBatch(model, tokenizer, max_model_len=max_model_len, tempered_logprobs=tempered_logprobs)
    batch.admit(range(rows), prompts, settings, tops)
    while batch.rows:
        batch.step()
    done = dict(batch.take_finished())
    return [done[row] for row in range(rows)]


@dataclass(eq=False)
class _Row:
    """One completion in progress in a ``DecodeBatch``."""

    key: Hashable
    prompt: list[int]
    sampling: Sampling
    budget: int
    top_logprobs: int
    generator: torch.Generator | None
    slot: int = -1
    """The row's slot in the batch's ``SlotCache``."""
    cached: int = 0
    """Tokens of the row in the cache (they end at the cache's column ``hi``)."""
    response: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tops: list[list[tuple[int, float]]] = field(default_factory=list)
    tempered: list[float] = field(default_factory=list)
    finish: Literal["stop", "length"] | None = None

    def completion(self, tokenizer: Any, tempered: bool) -> Completion:
        return Completion(
            text=final_text(tokenizer, self.response, self.sampling.stop),
            finish_reason=self.finish or "length",
            prompt_ids=self.prompt,
            response_ids=self.response,
            logprobs=self.logprobs,
            top_logprobs=self.tops if self.top_logprobs else None,
            tempered_logprobs=self.tempered if tempered else None,
        )


class DecodeBatch:
    """Rows decoding together over one KV cache; rows join between steps (``admit``) and leave when they finish
    (or are ``drop``-ped), so the batch holds only unfinished rows.

    The cache is a ``SlotCache`` (``mara_bench.harness.providers.kv_slots``): preallocated buffers in which every row owns
    a slot, its tokens left-padded to end at the shared column ``hi``. ``admit`` prefills newcomers as their
    own left-padded batch and writes their keys and values into free slots (the running rows are not copied);
    ``step`` picks one token per row from the pending logits (one host transfer for the whole batch), retires
    finished rows to ``take_finished`` (their slots are freed, not copied out; the live slots are packed once
    half are free), and feeds the survivors' tokens, which the model writes in place at ``hi``. Per slot it
    keeps the position of its last token and the logits of its next one. Each row's numbers depend only on its
    own tokens (padding is masked and positions are per row), so a row gets the same tokens and logprobs
    whichever rows it shares steps with.
    Only caches made of plain full-attention ``DynamicLayer``s can be kept this way
    (``kv_slots.unmergeable_cache_reason``);
    for other models a batch is admitted once and runs on the model's own cache (``OwnCache``), its finished rows
    masked until the end, as ``transformers``' ``generate`` does.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, max_model_len: int | None = None, tempered_logprobs: bool = False
    ):
        self.model = model
        self.tempered_logprobs = tempered_logprobs
        """Also record each token's logprob at its row's sampling temperature (``Completion.tempered_logprobs``)."""
        self.tokenizer = tokenizer
        self.limit = max_model_len or context_length(model)
        self.device = next(model.parameters()).device
        self.eos_ids = torch.tensor(sorted(stop_token_ids(model, tokenizer)), device=self.device)
        self.pad_id = tokenizer.pad_token_id or 0
        self.step_sizes = RecentSizes()
        """The number of rows of every recent decode step (for tests and benchmarks)."""
        self._finished: list[tuple[Hashable, Completion]] = []
        self.clear()

    def clear(self) -> None:
        """Forget every running row (after a failed step, whose cache may be half updated)."""
        self.rows: list[_Row] = []
        self.cache: SlotCache | OwnCache | None = None
        self._free: list[int] = []
        self._positions = self._logits = torch.empty(0)

    @torch.inference_mode()
    def admit(
        self,
        keys: Iterable[Hashable],
        prompts: Sequence[Sequence[int]],
        settings: Sequence[Sampling],
        top_logprobs: Sequence[int],
    ) -> None:
        """Prefill new rows (``keys`` name them in ``step``'s results) and add them to the running batch."""
        if self.cache is not None and not self.cache.can_take_rows:
            raise ValueError(
                "this model's KV cache cannot take new rows into a running batch (see kv_slots.unmergeable_cache_reason)"
            )
        rows = [
            _Row(
                key=key,
                prompt=list(prompt),
                sampling=setting,
                budget=_token_budget(len(prompt), setting.max_tokens, self.limit, index),
                top_logprobs=top,
                generator=row_generator(setting.seed, self.device),
            )
            for index, (key, prompt, setting, top) in enumerate(
                zip(keys, prompts, settings, top_logprobs, strict=True)
            )
        ]
        input_ids, mask = _left_pad(prompts, self.pad_id, self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with self._routed([row.sampling.adapter for row in rows]):
            out = self.model(
                input_ids=input_ids,
                attention_mask=mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
            )
        width = mask.shape[1]
        prefilled = returned_cache(out)
        if self.cache is None and not SlotCache.holds(prefilled):
            self.cache = OwnCache(prefilled, mask)
            self._positions, self._logits = positions[:, -1].clone(), out.logits[:, -1, :]
            for slot, row in enumerate(rows):
                row.slot, row.cached = slot, len(row.prompt)
            self.rows = rows
            return
        if self.cache is None:
            self.cache = SlotCache(prefilled, slots=len(rows), columns=2 * width + 16, hi=width)
            self._positions = positions.new_zeros(0)
            self._logits = out.logits.new_zeros(0, out.logits.shape[-1])
        window = self.cache.window
        slots = self._free[: len(rows)]
        slots += range(window.rows, window.rows + len(rows) - len(slots))
        self.cache.reserve(max(window.rows, slots[-1] + 1), left=width, right=1)
        if slots[-1] >= window.rows:  # new slots join the forward pass
            grow = slots[-1] + 1 - window.rows
            self._positions = torch.cat([self._positions, positions.new_zeros(grow)])
            self._logits = torch.cat([self._logits, out.logits.new_zeros(grow, out.logits.shape[-1])])
            window.rows += grow
        self._free = self._free[len(rows) :]
        index = torch.tensor(slots, device=self.device)
        self.cache.write(index, prefilled, mask)
        self._positions[index] = positions[:, -1]
        self._logits[index] = out.logits[:, -1, :]
        for row, slot in zip(rows, slots, strict=True):
            row.slot, row.cached = slot, len(row.prompt)
        self.rows = self.rows + rows

    @torch.inference_mode()
    def step(self) -> None:
        """Give every row its next token; rows that finish leave the batch for ``take_finished``."""
        live = torch.tensor([row.slot for row in self.rows], device=self.device)
        logits = self._logits[live].float()
        log_probs = torch.log_softmax(logits, dim=-1)
        tokens = choose_tokens(logits, [r.sampling for r in self.rows], [r.generator for r in self.rows])
        chosen = log_probs.gather(1, tokens[:, None])[:, 0]
        ended = torch.isin(tokens, self.eos_ids)
        columns = [tokens.double(), chosen.double(), ended.double()]
        if self.tempered_logprobs:
            columns.append(self._tempered(logits, tokens, chosen).double())
        # one transfer to the host for the whole batch (token ids are exact in float64)
        token_ids, token_logprobs, token_ended, *token_tempered = torch.stack(columns).tolist()
        most = max(r.top_logprobs for r in self.rows)
        best = log_probs.topk(most, dim=-1) if most else None
        best_ids, best_values = (
            (best.indices.tolist(), best.values.tolist()) if best is not None else ([], [])
        )
        self.step_sizes.append(len(self.rows))
        for index, row in enumerate(self.rows):
            row.response.append(int(token_ids[index]))
            row.logprobs.append(token_logprobs[index])
            if token_tempered:
                row.tempered.append(token_tempered[0][index])
            if row.top_logprobs:
                count = row.top_logprobs
                row.tops.append(list(zip(best_ids[index][:count], best_values[index][:count], strict=True)))
            if token_ended[index] or ends_with_stop(self.tokenizer, row.response, row.sampling.stop):
                row.finish = "stop"
            elif len(row.response) >= row.budget:
                row.finish = "length"
        self._finished += [
            (row.key, row.completion(self.tokenizer, self.tempered_logprobs))
            for row in self.rows
            if row.finish
        ]
        survivors = [index for index, row in enumerate(self.rows) if not row.finish]
        self._keep(survivors)
        if self.rows:
            self._feed(tokens[survivors])

    def run(self, until: threading.Event) -> None:
        """Step until a row has finished, ``until`` is set, or no row is left."""
        while self.rows and not self._finished and not until.is_set():
            self.step()

    def take_finished(self) -> list[tuple[Hashable, Completion]]:
        """The rows finished since the last call, as ``(key, completion)`` (kept even if a later step failed)."""
        finished, self._finished = self._finished, []
        return finished

    def discard(self) -> None:
        """Forget everything: the running rows and the completions not yet taken (their callers have gone)."""
        self.clear()
        self._finished = []

    def take_outcomes(self, error: Exception | None = None) -> list[tuple[Hashable, Completion | Exception]]:
        """What each row's caller hears after decoding: the finished rows their completions, and when the step
        failed with ``error``, every running row that error -- the cache may be half updated, so the batch then
        starts afresh."""
        outcomes: list[tuple[Hashable, Completion | Exception]] = [*self.take_finished()]
        if error is not None:
            outcomes += [(row.key, error) for row in self.rows]
            self.clear()
        return outcomes

    @torch.inference_mode()
    def drop(self, keys: Iterable[Hashable]) -> None:
        """Remove the rows named by ``keys`` (cancelled requests) from the batch."""
        gone = set(keys)
        self._keep([index for index, row in enumerate(self.rows) if row.key not in gone])

    def _routed(self, adapters: Sequence[str | None]) -> Any:
        """Route each row of the next forward through its adapter when any row names one (``None``: the model's
        active adapter); no routing otherwise."""
        if not any(adapters):
            return nullcontext()
        default = active_adapter(self.model)
        return adapter_rows(self.model, [name or default for name in adapters])

    def _tempered(self, logits: Any, tokens: Any, chosen: Any) -> Any:
        """The chosen tokens' logprobs at each row's sampling temperature (1 for greedy rows); ``chosen`` (the
        temperature-1 logprobs) as they are when every row samples at temperature 1."""
        temperatures = [r.sampling.temperature or 1.0 for r in self.rows]
        if all(t == 1.0 for t in temperatures):
            return chosen
        scale = torch.tensor(temperatures, device=logits.device, dtype=logits.dtype)[:, None]
        return torch.log_softmax(logits / scale, dim=-1).gather(1, tokens[:, None])[:, 0]

    def _keep(self, indices: list[int]) -> None:
        """Keep only the rows at ``indices``: the others' slots are freed; the window starts at the oldest kept
        row's first token; the live slots are packed when half the slots are free."""
        if len(indices) == len(self.rows):
            return
        kept = {id(self.rows[i]) for i in indices}
        self._free += sorted(row.slot for row in self.rows if id(row) not in kept)
        self.rows = [self.rows[i] for i in indices]
        if not self.rows:
            self.clear()
            return
        cache = self.cache
        if not isinstance(cache, SlotCache):  # the model's own cache keeps every row to the end
            return
        window = cache.window
        window.lo = max(window.lo, window.hi - max(row.cached for row in self.rows))
        if 2 * len(self.rows) <= window.rows:
            keep = torch.tensor([row.slot for row in self.rows], device=self.device)
            cache.relayout(keep, slots=cache.slots, columns=cache.columns, lo=window.lo)
            self._positions, self._logits = self._positions[keep], self._logits[keep]
            for slot, row in enumerate(self.rows):
                row.slot = slot
            self._free = []

    def _feed(self, tokens: torch.Tensor) -> None:
        """Run the rows' newest tokens through the model: the next logits, and one more cached column. Free
        slots run too (a pad token at a fixed position), so no slot needs moving."""
        cache = self.cache
        assert cache is not None
        window = cache.window
        cache.reserve(window.rows, left=0, right=1)
        live = torch.tensor([row.slot for row in self.rows], device=self.device)
        input_ids = torch.full((window.rows, 1), self.pad_id, dtype=torch.long, device=self.device)
        input_ids[live, 0] = tokens
        self._positions[live] += 1
        cache.mask[: window.rows, window.hi] = 1
        slots: list[str | None] = [BASE] * window.rows  # free slots decode a pad token on the base weights
        for row in self.rows:
            slots[row.slot] = row.sampling.adapter
        with self._routed(slots if any(row.sampling.adapter for row in self.rows) else []):
            out = self.model(
                input_ids=input_ids,
                attention_mask=cache.attention_mask(new_columns=1),
                position_ids=self._positions[:, None],
                **{cache_keyword(self.model): cache.past_key_values},
                use_cache=True,
            )
        window.hi += 1
        self._logits = out.logits[:, -1, :]
        for row in self.rows:
            row.cached += 1


def _token_budget(prompt_length: int, max_tokens: int, limit: int, row: int) -> int:
    if prompt_length == 0:
        raise ValueError(f"prompt {row} is empty")
    if prompt_length >= limit:
        raise PromptTooLongError(
            f"prompt {row} has {prompt_length} tokens but the model's context is {limit} tokens "
            "(max_model_len): shorten the input or use a model with a longer context"
        )
    return min(max_tokens, limit - prompt_length)


def _left_pad(
    prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)
