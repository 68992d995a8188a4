"""Batched text generation with per-row sampling settings on a live ``transformers`` causal LM.

This is the generation core shared by the ``local/`` Inspect provider and the trainer's rollout engine::

    from harness.providers.generation import Sampling, generate, render_prompt

    prompt = render_prompt(tokenizer, [{"role": "user", "content": "2+2?"}])
    [done] = generate(model, tokenizer, [prompt], Sampling(max_tokens=64, temperature=0.6, top_p=0.95, seed=1))
    done.text, done.finish_reason, done.prompt_ids, done.response_ids, done.logprobs

* Every row of a batch has its own ``Sampling`` (temperature, top-p, top-k, max tokens, stop strings, seed), so
  unrelated requests share one forward pass. A row with a ``seed`` draws from its own random generator: the same
  request gives the same tokens alone or in any batch. ``temperature=0`` is greedy decoding.
* ``logprobs[i]`` is the log-probability of ``response_ids[i]`` under the model's *unmodified* next-token
  distribution (temperature 1, no top-p/top-k): what a forward pass over prompt + response gives.
* ``response_ids`` holds every sampled token, the end-of-sequence token included; ``text`` is the decoded
  completion without special tokens, cut before the first stop string (as vLLM and OpenAI report it).
* ``finish_reason`` is ``"stop"`` (end-of-sequence token or stop string) or ``"length"`` (``max_tokens`` reached,
  or the model's context ``max_model_len`` reached -- the row is then cut at the context end, never silently).
  A prompt that leaves no room for a single new token raises ``PromptTooLongError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch


class PromptTooLongError(ValueError):
    """A prompt does not fit the model's context window."""


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

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = off), got {self.top_k}")


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


def render_prompt(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    chat_template: str | None = None,
    **template_kwargs: Any,
) -> list[int]:
    """Token ids of ``messages`` rendered with the chat template (the tokenizer's own unless one is given)."""
    if chat_template is None and not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', '')!r} has no chat template; give one "
            "(-M chat_template=FILE, or chat_template: in checkpoints.yaml)"
        )
    encoded = tokenizer.apply_chat_template(
        messages,
        tools=tools or None,
        chat_template=chat_template,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        **template_kwargs,
    )
    return list(encoded["input_ids"])


PROBE_TOOL = "mara_probe_tool"


def template_renders_tools(tokenizer: Any, **template_kwargs: Any) -> bool:
    """Whether the tokenizer's chat template writes the ``tools`` it is given into the prompt."""
    probe = {"type": "function", "function": {"name": PROBE_TOOL, "description": "", "parameters": {}}}
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}],
        tools=[probe],
        add_generation_prompt=True,
        tokenize=False,
        **template_kwargs,
    )
    return PROBE_TOOL in text


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


def context_length(model: Any) -> int:
    """The model's context window (``max_position_embeddings`` of its config)."""
    return int(getattr(model.config, "max_position_embeddings", 0) or 2**31)


@torch.inference_mode()
def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Sequence[int]],
    sampling: Sampling | Sequence[Sampling],
    *,
    max_model_len: int | None = None,
    top_logprobs: int = 0,
) -> list[Completion]:
    """Complete each prompt (token ids) with its own sampling settings, as one left-padded batch.

    ``sampling`` is one setting for every row or one per row. ``max_model_len`` defaults to the model's context
    window. Returns one ``Completion`` per prompt, in order.
    """
    rows = len(prompts)
    settings = [sampling] * rows if isinstance(sampling, Sampling) else list(sampling)
    if len(settings) != rows:
        raise ValueError(f"got {rows} prompts but {len(settings)} sampling settings")
    if rows == 0:
        return []
    limit = max_model_len or context_length(model)
    budgets = [
        _token_budget(len(p), s.max_tokens, limit, i)
        for i, (p, s) in enumerate(zip(prompts, settings, strict=True))
    ]

    device = next(model.parameters()).device
    input_ids, attention_mask = _left_pad(prompts, tokenizer.pad_token_id or 0, device)
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    eos_ids = torch.tensor(sorted(stop_token_ids(model, tokenizer)), device=device)
    generators = [_row_generator(s.seed, device) for s in settings]

    responses: list[list[int]] = [[] for _ in range(rows)]
    logprobs: list[list[float]] = [[] for _ in range(rows)]
    tops: list[list[list[tuple[int, float]]]] = [[] for _ in range(rows)]
    finish: list[str | None] = [None] * rows
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, use_cache=True)
    for _ in range(max(budgets)):
        logits = out.logits[:, -1, :].float()
        log_probs = torch.log_softmax(logits, dim=-1)
        tokens = _choose_tokens(logits, settings, generators)
        token_logprobs = log_probs.gather(1, tokens[:, None])[:, 0]
        ended = torch.isin(tokens, eos_ids).tolist()
        best = log_probs.topk(top_logprobs, dim=-1) if top_logprobs else None
        for row in range(rows):
            if finish[row] is not None:
                continue
            responses[row].append(int(tokens[row]))
            logprobs[row].append(float(token_logprobs[row]))
            if best is not None:
                tops[row].append(
                    list(zip(best.indices[row].tolist(), best.values[row].tolist(), strict=True))
                )
            if ended[row] or _ends_with_stop(tokenizer, responses[row], settings[row].stop):
                finish[row] = "stop"
            elif len(responses[row]) >= budgets[row]:
                finish[row] = "length"
        if all(f is not None for f in finish):
            break
        attention_mask = torch.cat([attention_mask, attention_mask.new_ones(rows, 1)], dim=1)
        positions = positions[:, -1:] + 1
        out = model(
            input_ids=tokens[:, None],
            attention_mask=attention_mask,
            position_ids=positions,
            past_key_values=out.past_key_values,
            use_cache=True,
        )
    return [
        Completion(
            text=_final_text(tokenizer, responses[row], settings[row].stop),
            finish_reason=finish[row],  # type: ignore[arg-type]
            prompt_ids=list(prompts[row]),
            response_ids=responses[row],
            logprobs=logprobs[row],
            top_logprobs=tops[row] if top_logprobs else None,
        )
        for row in range(rows)
    ]


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


def _row_generator(seed: int | None, device: torch.device) -> torch.Generator | None:
    if seed is None:
        return None
    return torch.Generator(device=device).manual_seed(seed)


def _choose_tokens(
    logits: torch.Tensor, settings: Sequence[Sampling], generators: Sequence[torch.Generator | None]
) -> torch.Tensor:
    """Next token per row: argmax for greedy rows; a draw from the temperature/top-k/top-p filtered distribution."""
    chosen = logits.argmax(dim=-1)
    sampled = [row for row, s in enumerate(settings) if s.temperature > 0 and s.top_k != 1]
    if not sampled:
        return chosen
    index = torch.tensor(sampled, device=logits.device)
    temperature = torch.tensor([settings[r].temperature for r in sampled], device=logits.device)
    top_k = torch.tensor([settings[r].top_k or logits.shape[-1] for r in sampled], device=logits.device)
    top_p = torch.tensor([settings[r].top_p for r in sampled], device=logits.device)
    sorted_logits, order = (logits[index] / temperature[:, None]).sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    rank = torch.arange(logits.shape[-1], device=logits.device)[None, :]
    # keep the top-k ranks, and the smallest prefix whose mass reaches top-p (the first token always stays)
    keep = (rank < top_k[:, None]) & ((probs.cumsum(dim=-1) - probs) < top_p[:, None])
    probs = torch.where(keep, probs, torch.zeros_like(probs))
    for i, row in enumerate(sampled):
        pick = torch.multinomial(probs[i], 1, generator=generators[row])
        chosen[row] = order[i, pick[0]]
    return chosen


def _ends_with_stop(tokenizer: Any, response: list[int], stops: tuple[str, ...]) -> bool:
    """Whether a stop string ends inside the newest token (only the tail is decoded: every token has a byte,
    so a stop string of ``n`` UTF-8 bytes lies within the last ``n + 1`` tokens)."""
    if not stops:
        return False
    tail = tokenizer.decode(response[-(max(len(s.encode()) for s in stops) + 2) :], skip_special_tokens=True)
    return any(stop in tail for stop in stops)


def _final_text(tokenizer: Any, response: list[int], stops: tuple[str, ...]) -> str:
    text = tokenizer.decode(response, skip_special_tokens=True)
    cuts = [text.find(stop) for stop in stops if stop in text]
    return text[: min(cuts)] if cuts else text
