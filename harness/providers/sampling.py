"""Per-row sampling settings and how they apply: the next token of each row, and where a completion stops.

* Every row of a batch has its own ``Sampling`` (temperature, top-p, top-k, max tokens, stop strings, seed), so
  unrelated requests share one forward pass (``mara_bench.harness.providers.generation``). A row with a ``seed`` draws from
  its own random generator (``row_generator``): the same request gives the same tokens alone or in any batch.
  ``temperature=0`` is greedy decoding.
* ``choose_tokens`` picks one token per row from a batch of next-token logits: argmax for greedy rows, else a
  draw from the temperature / top-k / top-p filtered distribution.
* A completion stops at an end-of-sequence token (``stop_token_ids``) or a stop string (``ends_with_stop``); its
  text is cut before the first stop string (``final_text``, as vLLM and OpenAI report it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Sampling:
    """How to sample one completion."""

    max_tokens: int = 256
    temperature: float = 1.0
    """0 means greedy decoding."""
    top_p: float = 1.0
    top_k: int = 0
    """0 means no top-k cut."""
    stop: tuple[str, ...] = ()
    """Strings that end the completion (the text is cut before the first one)."""
    seed: int | None = None
    """Seed of this row's own random generator; ``None`` draws from torch's global generator."""
    adapter: str | None = None
    """The LoRA adapter of a peft model holding several that this row decodes with
    (``mara_bench.harness.providers.adapter_rows``); ``None``: the model's active one."""

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = off), got {self.top_k}")


def row_generator(seed: int | None, device: torch.device) -> torch.Generator | None:
    """The row's own random generator for a seeded ``Sampling``; ``None``: torch's global one."""
    if seed is None:
        return None
    return torch.Generator(device=device).manual_seed(seed)


def choose_tokens(
    logits: torch.Tensor, settings: Sequence[Sampling], generators: Sequence[torch.Generator | None]
) -> torch.Tensor:
    """Next token per row: argmax for greedy rows; a draw from the temperature/top-k/top-p filtered distribution.
    The sampled rows are drawn together (one cumulative sum and search), each from its own uniform."""
    sampled = [row for row, s in enumerate(settings) if s.temperature > 0 and s.top_k != 1]
    every = len(sampled) == len(settings)
    if every:  # the common case: no row to pick out or put back
        scaled = logits
    else:
        chosen = logits.argmax(dim=-1)
        if not sampled:
            return chosen
        index = torch.tensor(sampled, device=logits.device)
        scaled = logits[index]
    temperatures = [settings[r].temperature for r in sampled]
    if any(t != 1.0 for t in temperatures):
        scaled = scaled / torch.tensor(temperatures, device=logits.device)[:, None]
    probs = _filtered_probs(scaled, [settings[r] for r in sampled])
    picks = _draw(probs, _uniforms([generators[r] for r in sampled], logits.device))
    if every:
        return picks
    chosen[index] = picks
    return chosen


def _uniforms(generators: Sequence[torch.Generator | None], device: torch.device) -> torch.Tensor:
    """``(rows, 1)`` uniform draws in [0, 1), float64: the rows without a generator take one draw together from
    torch's global generator (in row order), a seeded row one from its own generator."""
    shared = [i for i, generator in enumerate(generators) if generator is None]
    common = torch.rand((len(shared), 1), dtype=torch.float64, device=device) if shared else None
    if len(shared) == len(generators):
        return common
    uniforms = torch.cat(
        [
            torch.rand((1, 1), dtype=torch.float64, device=device, generator=generator)
            if generator is not None
            else torch.zeros((1, 1), dtype=torch.float64, device=device)
            for generator in generators
        ]
    )
    if common is not None:
        uniforms[torch.tensor(shared, device=device)] = common
    return uniforms


def _draw(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of ``probs`` (rows need not sum to 1) by inverting the cumulative distribution at the
    row's uniform draw (``uniforms``, ``(rows, 1)`` in [0, 1)) -- exact, and on a CPU some 20x faster than
    ``torch.multinomial``."""
    cumulative = probs.double().cumsum(dim=-1)
    scaled = uniforms * cumulative[:, -1:]
    picks = torch.searchsorted(cumulative, scaled, right=True)[:, 0]  # the first token whose mass covers it
    positions = torch.arange(probs.shape[-1], device=probs.device)
    last = torch.where(probs > 0, positions, 0).amax(
        dim=-1
    )  # rounding at the very top: the last possible token
    return torch.minimum(picks, last)


def _filtered_probs(scaled: torch.Tensor, settings: Sequence[Sampling]) -> torch.Tensor:
    """Each row's next-token probabilities (vocabulary order) from its ``scaled`` logits after its top-k /
    top-p cut; only the rows that cut are sorted."""
    probs = scaled.softmax(dim=-1)
    vocabulary = scaled.shape[-1]
    cut = [i for i, s in enumerate(settings) if 0 < s.top_k < vocabulary or s.top_p < 1]
    if not cut:
        return probs
    rows = torch.tensor(cut, device=scaled.device)
    top_k = torch.tensor([settings[i].top_k or vocabulary for i in cut], device=scaled.device)
    top_p = torch.tensor([settings[i].top_p for i in cut], device=scaled.device)
    ranked, order = probs[rows].sort(dim=-1, descending=True)
    rank = torch.arange(vocabulary, device=scaled.device)[None, :]
    # keep the top-k ranks, and the smallest prefix whose mass reaches top-p (the first token always stays)
    keep = (rank < top_k[:, None]) & ((ranked.cumsum(dim=-1) - ranked) < top_p[:, None])
    probs[rows] = torch.zeros_like(ranked).scatter(
        -1, order, torch.where(keep, ranked, torch.zeros_like(ranked))
    )
    return probs


def stop_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """The end-of-sequence token ids of a model: its generation config's and its tokenizer's."""
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(configured)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def ends_with_stop(tokenizer: Any, response: list[int], stops: tuple[str, ...]) -> bool:
    """Whether a stop string ends inside the newest token (only the tail is decoded: every token has a byte,
    so a stop string of ``n`` UTF-8 bytes lies within the last ``n + 1`` tokens)."""
    if not stops:
        return False
    tail = tokenizer.decode(response[-(max(len(s.encode()) for s in stops) + 2) :], skip_special_tokens=True)
    return any(stop in tail for stop in stops)


def final_text(tokenizer: Any, response: list[int], stops: tuple[str, ...]) -> str:
    """The completion's text: ``response`` decoded without special tokens, cut before the first stop string."""
    text = tokenizer.decode(response, skip_special_tokens=True)
    cuts = [text.find(stop) for stop in stops if stop in text]
    return text[: min(cuts)] if cuts else text
