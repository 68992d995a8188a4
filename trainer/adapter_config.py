"""The recipe's per-role LoRA settings: ``model.lora`` (the adapters' shape) and ``roles`` (what each role trains).

With ``model.lora`` set, the base weights are frozen and every role of the system decodes and trains through a
LoRA adapter on them (``mara_bench.trainer.learner.adapters``): its own (``own``, the default), one adapter shared by every
``shared`` role, or its own adapter never updated (``frozen``); each trained adapter has its own optimiser state
and learning rate. The KL reference is the base with the adapters switched off.
"""

from __future__ import annotations

import typing
from typing import Literal

from pydantic import Field, StrictFloat, StrictInt, StrictStr, field_validator

from mara_bench.core.typed_config import ConfigProblem, config_dataclass

AdapterMode = Literal["own", "shared", "frozen"]
ADAPTER_MODES = typing.get_args(AdapterMode)

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The attention and MLP projections of the Qwen2 / Llama decoder layers."""

VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ranks vLLM's multi-LoRA engine can be sized for (its ``max_lora_rank``); it serves adapters of any rank up
to the one it was sized for (``rollout.backend: vllm`` under ``model.lora``)."""

UNADAPTABLE = ("lm_head", "embed_tokens")
"""Modules an adapter may not wrap: the output head is applied by the trainer's chunked scorer
(``mara_bench.trainer.learner.logprobs``) and is tied to the embeddings of the small models."""


@config_dataclass
class LoraConfig:
    """The shape of every role's adapter (peft's ``LoraConfig``)."""

    r: StrictInt = Field(default=8, ge=1)
    """Rank of each adapted projection's update ``B @ A``."""
    alpha: StrictFloat = Field(default=16.0, gt=0)
    """Scale: the update is multiplied by ``alpha / r``."""
    dropout: StrictFloat = Field(default=0.0, ge=0, lt=1)
    """Dropout on the adapter's input in training forwards (none while decoding)."""
    target_modules: list[StrictStr] = Field(default_factory=lambda: list(DEFAULT_TARGETS), min_length=1)
    """Names of the linear layers that get an adapter (the suffix of their module names)."""

    @field_validator("target_modules")
    @classmethod
    def _adaptable(cls, names: list[str]) -> list[str]:
        for name in names:
            if name in UNADAPTABLE:
                raise ConfigProblem(
                    "",
                    f"{name!r} cannot take an adapter (the trainer scores with the base head)",
                    "remove it",
                )
        return names


@config_dataclass
class RoleConfig:
    """What one role of the system trains under ``model.lora``."""

    adapter: AdapterMode = "own"
    """``own``: its own adapter; ``shared``: the one adapter of every ``shared`` role; ``frozen``: its own
    adapter, never updated (its rows are not trained on)."""
    lr: StrictFloat | None = Field(default=None, gt=0)
    """Its adapter's AdamW peak learning rate; null: ``optim.lr``. The cold start scales ``warmup.lr`` by the
    same factor (this over ``optim.lr``), so a LoRA rate given here applies to the cold start too."""


def check_roles(roles: dict[str, RoleConfig], known: tuple[str, ...], system: str) -> None:
    """Raise ``ConfigProblem`` (keys under ``roles``) when ``roles`` names a role ``system`` lacks, freezes every
    role, gives a frozen role a learning rate, or gives the shared adapter two learning rates."""
    from mara_bench.core.typed_config import did_you_mean

    for role, settings in roles.items():
        if role not in known:
            raise ConfigProblem(
                role,
                f"system {system!r} has no role {role!r}",
                f"{did_you_mean(role, known)}its roles: {', '.join(known)}",
            )
        if settings.adapter == "frozen" and settings.lr is not None:
            raise ConfigProblem(f"{role}.lr", "a frozen adapter is never updated", "remove it")
    if known and all(roles.get(role, RoleConfig()).adapter == "frozen" for role in known):
        raise ConfigProblem(
            "", "freezes every role's adapter, so nothing trains", "leave one role own or shared"
        )
    shared = {settings.lr for settings in roles.values() if settings.adapter == "shared"}
    if len(shared) > 1:
        raise ConfigProblem(
            "", "the shared adapter is given several learning rates", "give every shared role the same lr"
        )


@config_dataclass
class AdapterRecipe:
    """A recipe's per-role adapter settings in a file of their own (``mara train RECIPE --adapters FILE``), so
    any recipe trains one adapter per role without a copy of it."""

    lora: LoraConfig = Field(default_factory=LoraConfig)
    """Becomes the recipe's ``model.lora``."""
    roles: dict[StrictStr, RoleConfig] = Field(default_factory=dict)
    """Becomes the recipe's ``roles``."""
