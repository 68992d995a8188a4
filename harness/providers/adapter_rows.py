"""Rows of one forward pass, each through its own LoRA adapter of a peft model (peft's mixed-adapter batches).

``adapter_rows(model, names)`` is a context in which every forward of ``model`` runs row ``i`` of its batch
through adapter ``names[i]`` (``BASE``: the base weights alone): a forward pre-hook on each LoRA layer passes
peft's ``adapter_names`` to it, which adds each adapter's update to its own rows only. Unlike
``PeftModel.forward(adapter_names=...)`` it holds in training mode too, so the trainer's loss and the rollout
engine route rows the same way. A row's numbers do not depend on the other rows' adapters.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

BASE = "__base__"
"""peft's name for "no adapter" in a mixed batch."""


def lora_layers(model: torch.nn.Module) -> list[Any]:
    """The model's LoRA layers (empty for a model without peft adapters)."""
    from peft.tuners.lora import LoraLayer

    return [module for module in model.modules() if isinstance(module, LoraLayer)]


def active_adapter(model: torch.nn.Module) -> str:
    """The adapter a peft model decodes with when none is named (``BASE`` for a plain model)."""
    return getattr(model, "active_adapter", BASE) if lora_layers(model) else BASE


@contextmanager
def adapter_rows(model: torch.nn.Module, names: Sequence[str]) -> Iterator[None]:
    """Route row ``i`` of every forward of ``model`` in this context through adapter ``names[i]``."""
    layers = lora_layers(model)
    if not layers:
        raise ValueError("rows name LoRA adapters, but the model has none")
    known = set(layers[0].lora_A) | {BASE}
    unknown = sorted(set(names) - known)
    if unknown:
        raise ValueError(f"no adapter named {unknown} on the model; it has {sorted(known - {BASE})}")
    routed = list(names)

    def route(module: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
        return args, {**kwargs, "adapter_names": routed}

    hooks = [layer.register_forward_pre_hook(route, with_kwargs=True) for layer in layers]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()
