"""A preallocated KV cache of row slots for ``DecodeBatch``: tokens are appended in place, and rows come and go
without copying the rows that stay.

``transformers``' ``DynamicCache`` concatenates every layer's keys and values with the new token's at every
decode step (a copy of the whole cache per token), and selecting or merging rows builds new tensors too. Here
each layer owns two buffers ``(slots, kv_heads, columns, head_dim)`` allocated ahead, with an attention mask
``(slots, columns)`` beside them, and every row of the running batch owns one slot. All slots share one column
window ``[lo, hi)``; a row's tokens end at ``hi`` (left padding, masked out), so a decode step writes ONE
column for every slot, in place, and attention reads the window as a view.

* A finished or cancelled row frees its slot: nothing is copied; a newcomer takes it later. Until then the
  slot still goes through the forward pass (compute, not copies); ``DecodeBatch`` packs the live slots
  (``relayout``) once half of them are free.
* Admission writes the newcomers' prefilled keys and values into their slots, ending at ``hi``: only the
  newcomers' data moves, never the running rows'.
* ``lo`` moves right as the oldest rows leave (columns no live row needs are no longer read). When the buffers
  run out of slots or columns, ``reserve`` reallocates them with room in proportion to what they hold (half the
  window's width spare on each side, twice the slots), so the cache is copied O(log n) times over n tokens,
  not once per token, and the buffers stay within about twice the window.
* Only caches made of plain full-attention layers can be kept this way: ``unmergeable_cache_reason`` names what
  stops a model's cache (sliding-window, hybrid, linear-attention or quantised layers).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer


@dataclass
class Window:
    """The columns ``[lo, hi)`` that hold cached tokens; slots ``[0, rows)`` take part in a forward pass."""

    lo: int
    hi: int
    rows: int


class SlotLayer(DynamicLayer):
    """One decoder layer's keys and values in preallocated buffers; ``update`` writes new tokens at ``hi``."""

    def __init__(self, window: Window, keys: torch.Tensor, values: torch.Tensor):
        super().__init__()
        self.window = window
        self.key_buffer, self.value_buffer = keys, values
        self.dtype, self.device = keys.dtype, keys.device
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        window = self.window
        end = window.hi + key_states.shape[-2]
        self.key_buffer[: window.rows, :, window.hi : end] = key_states
        self.value_buffer[: window.rows, :, window.hi : end] = value_states
        return (
            self.key_buffer[: window.rows, :, window.lo : end],
            self.value_buffer[: window.rows, :, window.lo : end],
        )

    def get_seq_length(self) -> int:
        return self.window.hi - self.window.lo


class SlotCache(Cache):
    """The ``past_key_values`` of a ``DecodeBatch``: a ``SlotLayer`` per decoder layer over one ``Window``,
    and the attention mask of every slot over the buffers' columns (1 on a slot's cached tokens)."""

    can_take_rows = True

    def __init__(self, prefilled: Cache, slots: int, columns: int, hi: int):
        window = Window(lo=hi, hi=hi, rows=0)
        layers = []
        for layer in prefilled.layers:
            _, heads, _, dim = layer.keys.shape
            shape = (slots, heads, columns, dim)
            layers.append(SlotLayer(window, layer.keys.new_zeros(shape), layer.values.new_zeros(shape)))
        super().__init__(layers=layers)
        self.window = window
        self.mask = torch.zeros((slots, columns), dtype=torch.long, device=layers[0].device)

    @property
    def past_key_values(self) -> SlotCache:
        return self

    @classmethod
    def holds(cls, prefilled: Cache) -> bool:
        """Whether a prefill's cache can be kept in slots: plain full-attention ``DynamicLayer``s only."""
        return type(prefilled) is DynamicCache and all(
            type(layer) is DynamicLayer and layer.is_initialized for layer in prefilled.layers
        )

    @property
    def slots(self) -> int:
        return self.mask.shape[0]

    @property
    def columns(self) -> int:
        return self.mask.shape[1]

    def write(self, slots: torch.Tensor, prefilled: Cache, mask: torch.Tensor) -> None:
        """Put prefilled rows (left-padded to width ``P``, ``mask`` ``(rows, P)``) into ``slots``, at columns
        ``[hi - P, hi)``; the window widens to start there at the latest (``reserve`` made the room)."""
        window, width = self.window, mask.shape[1]
        start = window.hi - width
        for layer, new in zip(self.layers, prefilled.layers, strict=True):
            layer.key_buffer[slots, :, start : window.hi] = new.keys
            layer.value_buffer[slots, :, start : window.hi] = new.values
        self.mask[slots] = 0
        self.mask[slots, start : window.hi] = mask
        window.lo = min(window.lo, start)

    def attention_mask(self, new_columns: int = 0) -> torch.Tensor:
        """The mask over the window plus ``new_columns`` columns at ``hi``, for the ``rows`` slots."""
        window = self.window
        return self.mask[: window.rows, window.lo : window.hi + new_columns]

    def reserve(self, slots: int, left: int, right: int) -> None:
        """Make room for ``slots`` slots, ``left`` columns before ``hi`` and ``right`` from ``hi`` on; when
        there is not enough, reallocate with half the window's width spare on each side (and twice the slots)."""
        window = self.window
        if slots <= self.slots and left <= window.hi and window.hi + right <= self.columns:
            return
        used = window.hi - window.lo
        spare = used // 2 + 16  # room grows with the window: copies stay rare (amortised O(1) per token)
        lo = max(left, spare)
        self.relayout(
            torch.arange(window.rows, device=self.mask.device),
            slots=max(slots, 2 * self.slots) if slots > self.slots else self.slots,
            columns=lo + used + max(right, spare),
            lo=lo,
        )

    def relayout(self, keep: torch.Tensor, slots: int, columns: int, lo: int) -> None:
        """Reallocate to ``slots`` x ``columns``: slots ``keep`` become ``0..len(keep)-1`` (``rows`` = their
        number) and the window's columns start at ``lo``."""
        window = self.window
        used = window.hi - window.lo
        for layer in self.layers:
            for name in ("key_buffer", "value_buffer"):
                old = getattr(layer, name)
                new = old.new_zeros((slots, old.shape[1], columns, old.shape[3]))
                new[: len(keep), :, lo : lo + used] = old[keep, :, window.lo : window.hi]
                setattr(layer, name, new)
        mask = self.mask.new_zeros((slots, columns))
        mask[: len(keep), lo : lo + used] = self.mask[keep, window.lo : window.hi]
        self.mask = mask
        window.lo, window.hi, window.rows = lo, lo + used, len(keep)


class OwnCache:
    """A batch admitted once, on the model's own cache (for models ``SlotCache`` cannot hold: sliding-window,
    hybrid or linear-attention layers): the model appends to it as it does in ``generate``, finished rows stay
    in the forward pass (masked, as in ``generate``) and no row can join later. Same interface as
    ``SlotCache`` for ``DecodeBatch``: ``window``, ``mask``, ``attention_mask``, ``reserve``."""

    can_take_rows = False

    def __init__(self, prefilled: Cache, mask: torch.Tensor):
        rows, width = mask.shape
        self.past_key_values = prefilled
        self.window = Window(lo=0, hi=width, rows=rows)
        self.mask = mask.new_zeros((rows, 2 * width + 16))
        self.mask[:, :width] = mask

    def attention_mask(self, new_columns: int = 0) -> torch.Tensor:
        return self.mask[:, : self.window.hi + new_columns]

    def reserve(self, slots: int, left: int, right: int) -> None:
        """Room for ``right`` more mask columns (the model's cache grows by itself)."""
        if self.window.hi + right > self.mask.shape[1]:
            self.mask = torch.cat([self.mask, torch.zeros_like(self.mask)], dim=1)


def returned_cache(output: Any) -> Any:
    """The KV cache a forward pass returned: ``cache`` where transformers renamed it, else ``past_key_values``
    (reading the old name where the new one exists warns on every run)."""
    return output["cache"] if "cache" in output else output["past_key_values"]


def cache_keyword(model: Any) -> str:
    """The name ``model``'s forward takes a KV cache by: ``cache``, or ``past_key_values`` before the rename (a
    LoRA-wrapped model passes it on to its base model's forward)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _cache_keyword(type(getattr(base.forward, "__self__", base)))  # a wrapper's forward: its model's


@functools.cache
def _cache_keyword(model_class: type) -> str:
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


@torch.inference_mode()
def unmergeable_cache_reason(model: Any) -> str | None:
    """Why ``DecodeBatch`` cannot merge this model's KV caches (sliding-window, hybrid, linear-attention or
    quantised layers), or ``None`` when it can. Probed with a one-token forward pass."""
    probe = torch.zeros((1, 1), dtype=torch.long, device=next(model.parameters()).device)
    cache = returned_cache(model(input_ids=probe, use_cache=True))
    if type(cache) is not DynamicCache:
        return f"the model keeps a {type(cache).__name__}, not a DynamicCache"
    others = sorted({type(layer).__name__ for layer in cache.layers if type(layer) is not DynamicLayer})
    if others:
        return f"its cache has {', '.join(others)} layers, not only full-attention DynamicLayers"
    if not all(layer.is_initialized for layer in cache.layers):
        return "some cache layers stay empty (shared key/value states)"
    return None
