"""One frozen base, one LoRA adapter per role (``model.lora`` and ``roles`` of the recipe).

``RoleAdapters`` is the plan: which adapter each role of the system decodes and trains through (its own, the one
``shared`` adapter, or its own ``frozen`` one) and each trained adapter's learning rate. ``attach`` wraps the
base in a peft model holding every adapter, with only the trained adapters' weights requiring gradients; the
plan rides on the model (``plan_of``), so every forward over a micro-batch of rows routes each row through its
role's adapter (``routed``, peft's mixed-adapter batches). ``BaseWeights`` is the KL reference: the same model
with its adapters switched off, no second copy of the weights. ``export_adapters`` writes each role's adapter
as a standard PEFT folder ``<export>/adapters/<role>/`` (its ``adapter_config.json`` naming the base) beside
``base.json`` (the base's path and the sha256 of its weights), which ``local/<run>/adapters/<role>`` loads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mara_bench.harness.providers.adapter_rows import BASE, adapter_rows, lora_layers
from mara_bench.harness.providers.loading import peft_wrapping
from mara_bench.trainer.adapter_config import LoraConfig, RoleConfig

SHARED = "shared"
"""The adapter every ``shared`` role trains."""
ADAPTERS_DIR = "adapters"
BASE_FILE = "base.json"
PLAN_ATTRIBUTE = "role_adapters"
"""The attribute of the peft policy holding its ``RoleAdapters``."""


@dataclass(frozen=True)
class RoleAdapters:
    """Per role, the adapter it decodes and trains through; per trained adapter, its learning rate."""

    adapters: dict[str, str]
    """Role -> adapter name."""
    learning_rates: dict[str, float]
    """Trained adapter -> AdamW peak learning rate (a frozen adapter has none)."""

    @classmethod
    def plan(cls, roles: Sequence[str], settings: dict[str, RoleConfig], default_lr: float) -> RoleAdapters:
        """The plan for a system's ``roles`` under the recipe's ``roles`` settings (a role left out: own)."""
        adapters: dict[str, str] = {}
        learning_rates: dict[str, float] = {}
        for role in roles:
            setting = settings.get(role, RoleConfig())
            name = SHARED if setting.adapter == "shared" else role
            adapters[role] = name
            if setting.adapter != "frozen":
                learning_rates[name] = setting.lr if setting.lr is not None else default_lr
        if SHARED in roles and adapters[SHARED] != SHARED:
            raise ValueError(f"a role named {SHARED!r} cannot keep its own adapter beside the shared one")
        return cls(adapters, learning_rates)

    @property
    def names(self) -> list[str]:
        """Every adapter, in role order."""
        return list(dict.fromkeys(self.adapters.values()))

    @property
    def frozen_roles(self) -> frozenset[str]:
        """Roles whose adapter is never updated (their rows are not trained on)."""
        return frozenset(role for role, name in self.adapters.items() if name not in self.learning_rates)

    def cold_start_rates(self, warmup_lr: float, rl_lr: float) -> dict[str, float]:
        """Per trained adapter, its cold-start peak learning rate: ``warmup_lr`` (the recipe's ``warmup.lr``, set
        for the full weights) scaled as the adapter's RL rate scales ``rl_lr`` (``optim.lr``). A role's ``lr`` thus
        says how much faster its adapter learns than the full weights, in the cold start as in RL (LoRA wants
        about ten times the full-weight rate)."""
        return {name: warmup_lr * lr / rl_lr for name, lr in self.learning_rates.items()}

    def adapter(self, role: str) -> str:
        """The adapter ``role`` decodes and trains through."""
        try:
            return self.adapters[role]
        except KeyError:
            raise ValueError(f"no adapter for role {role!r}; the roles: {', '.join(self.adapters)}") from None


def attach(model: torch.nn.Module, lora: LoraConfig, plan: RoleAdapters) -> Any:
    """``model`` as a peft model with every adapter of ``plan`` (each initialised to no change: LoRA's ``B`` is
    zero); the base's weights and the frozen adapters' require no gradient."""
    from peft import LoraConfig as PeftLoraConfig
    from peft import get_peft_model

    settings = PeftLoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=list(lora.target_modules),
        task_type="CAUSAL_LM",
    )
    first, *others = plan.names
    with peft_wrapping():
        peft_model = get_peft_model(model, settings, adapter_name=first)
    for name in others:
        peft_model.add_adapter(name, settings)
    peft_model.requires_grad_(False)
    for name in plan.learning_rates:
        for parameter in adapter_parameters(peft_model, name):
            parameter.requires_grad_(True)
    setattr(peft_model, PLAN_ATTRIBUTE, plan)
    return peft_model


def plan_of(model: torch.nn.Module) -> RoleAdapters | None:
    """The ``RoleAdapters`` a policy was built with (``attach``); ``None`` for a full-weight model."""
    plan = model.__dict__.get(PLAN_ATTRIBUTE)
    return plan if isinstance(plan, RoleAdapters) else None


def adapter_parameters(model: torch.nn.Module, name: str) -> list[torch.nn.Parameter]:
    """The weights of adapter ``name`` (its ``A`` and ``B`` matrices in every LoRA layer)."""
    return [
        parameter
        for layer in lora_layers(model)
        for part in (layer.lora_A, layer.lora_B)
        if name in part
        for parameter in part[name].parameters()
    ]


def routed(model: torch.nn.Module, roles: Sequence[str], rows: int) -> AbstractContextManager[None]:
    """The context in which a forward over ``rows`` padded rows holding ``roles``' samples runs each through its
    role's adapter; nothing for a model without a plan. A packed row must hold one adapter's samples."""
    plan = plan_of(model)
    if plan is None:
        return nullcontext()
    names = [plan.adapter(role) for role in roles]
    if rows != len(names):
        if len(set(names)) != 1:
            raise ValueError("a packed micro-batch mixes adapters; lay rows out with optim.batching: bucket")
        names = names[:1] * rows
    return adapter_rows(model, names)


class BaseWeights(torch.nn.Module):
    """The KL reference under per-role adapters: the policy's forward with every row on the base weights (routed
    to ``BASE``; peft's ``disable_adapter`` would reset which adapters require gradients)."""

    def __init__(self, policy: Any):
        super().__init__()
        self.policy = policy
        self.config = policy.config

    def forward(self, input_ids: torch.Tensor, **kwargs: Any) -> Any:
        with adapter_rows(self.policy, [BASE] * len(input_ids)):
            return self.policy(input_ids=input_ids, **kwargs)

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.policy.get_output_embeddings()

    def get_base_model(self) -> torch.nn.Module:
        """The policy's base model (whose forward names the KV-cache keyword)."""
        return self.policy.get_base_model()


def base_sha256(model: Any) -> str:
    """sha256 over the base weights (names and bytes, in name order) of a peft model without its adapters, or of
    a plain model: the same for the base before and inside a peft model."""
    digest = hashlib.sha256()
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    state = {
        name.replace(".base_layer.", "."): tensor
        for name, tensor in base.state_dict().items()
        if "lora_" not in name
    }
    for name in sorted(state):
        digest.update(name.encode())
        digest.update(state[name].detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def adapter_sha256(model: torch.nn.Module, name: str) -> str:
    """sha256 over adapter ``name``'s weights (for tests and run checks: did it change?)."""
    digest = hashlib.sha256()
    for parameter in adapter_parameters(model, name):
        digest.update(parameter.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def base_reference(base: Path | str) -> str:
    """How an adapter's ``adapter_config.json`` names its base: the folder's absolute path, else the name."""
    return str(Path(base).resolve()) if Path(base).exists() else str(base)


def save_adapter(model: Any, name: str, folder: Path, base: str) -> None:
    """Write adapter ``name`` of ``model`` as a standard PEFT folder (``adapter_model.safetensors`` and
    ``adapter_config.json`` naming ``base``, for inference), which peft and vLLM both load."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = get_peft_model_state_dict(model, adapter_name=name)
    tensors = {key: value.detach().cpu().contiguous() for key, value in state.items()}
    save_file(tensors, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    settings = model.peft_config[name]
    previous = (settings.base_model_name_or_path, settings.inference_mode)
    settings.base_model_name_or_path, settings.inference_mode = base, True
    try:
        settings.save_pretrained(str(folder))
    finally:
        settings.base_model_name_or_path, settings.inference_mode = previous


def export_adapters(model: Any, directory: Path, base: Path | str) -> list[Path]:
    """Write every role's adapter as a PEFT folder ``directory/adapters/<role>/`` (a shared adapter under each
    of its roles) and ``directory/base.json``; returns the folders."""
    plan = plan_of(model)
    assert plan is not None, "export_adapters needs a policy built by attach"
    base_name = base_reference(base)
    folders = []
    for role, name in plan.adapters.items():
        folder = directory / ADAPTERS_DIR / role
        save_adapter(model, name, folder, base_name)
        folders.append(folder)
    record = {"base": base_name, "sha256": base_sha256(model), "adapters": plan.adapters}
    (directory / BASE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return folders
