"""The models a run trains and reads: the base weights (a tiny model built into the run directory when the
recipe names none), loaded onto this rank's device, sharded when the run is FSDP -- the policy, the frozen
reference when the KL penalty is on, and the critic when the advantage estimator needs one. Under ``model.lora``
the policy is the frozen base with one LoRA adapter per role (``mara_bench.trainer.learner.adapters``) and the reference is
that base with its adapters switched off."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

from mara_bench.harness.packaged_models import model_location
from mara_bench.trainer.config import ModelConfig
from mara_bench.trainer.learner.adapters import BaseWeights, RoleAdapters, attach
from mara_bench.trainer.learner.distributed import Distributed


@dataclass
class Models:
    """The run's tokenizer and models, and the base weights they were loaded from."""

    path: Path | str
    dtype: torch.dtype
    """The compute dtype (``model.dtype`` resolved): the trained models' forwards run in it, their parameters stay
    float32 (``mixed_precision``); the frozen reference and the vLLM engine hold their weights in it."""
    tokenizer: Any
    policy: torch.nn.Module
    reference: torch.nn.Module | None
    """The frozen policy at the start (``algorithm.kl_coef`` > 0); ``mara_bench.trainer.run.warmup`` sets it to the
    warmed-up one."""
    critic: torch.nn.Module | None
    """A token-value head on the base model (an estimator that needs a critic)."""
    adapters: RoleAdapters | None = None
    """Under ``model.lora``: each role's adapter on the policy (the reference is then ``BaseWeights``)."""


def base_model_path(model: ModelConfig, seed: int, run_dir: Path, dist: Distributed) -> Path | str:
    """``model.path`` (a packaged model's name: its converted checkpoint), else ``<run>/base-model``, built by
    rank 0 from the recipe's tiny-model settings and ``seed``."""
    if model.path:
        return model_location(model.path)
    path = run_dir / "base-model"
    if dist.is_main and not (path / "config.json").exists():
        from mara_bench.harness.tinymodel import build_tiny_model

        build_tiny_model(path, arch=model.tiny_arch, seed=seed, hidden_size=model.tiny_hidden_size)
    dist.barrier()
    return path


def mixed_precision(model: torch.nn.Module, compute_dtype: torch.dtype, device_type: str) -> None:
    """Keep a trained model's parameters in float32 and run its forward in ``compute_dtype`` (autocast), as verl's
    actor does (float32 weights, bfloat16 compute). Parameters held in bfloat16 lose every Adam update smaller
    than about 1/256 of the weight (8 bits of mantissa), so a run at a small learning rate stops learning."""
    if compute_dtype != torch.float32:
        model.forward = torch.autocast(device_type, dtype=compute_dtype)(model.forward)


def enable_activation_checkpointing(model: Any) -> None:
    """Turn on activation (gradient) checkpointing under either of transformers' names for it: releases up to
    about 5.17 have only ``gradient_checkpointing_enable``; later ones add ``activation_checkpointing_enable`` and
    deprecate the old name."""
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable({"use_reentrant": False})


def load_models(
    model: ModelConfig,
    run_dir: Path,
    dist: Distributed,
    device: torch.device | None,
    *,
    seed: int,
    reference: bool,
    critic: bool,
    adapters: RoleAdapters | None,
) -> Models:
    """The tokenizer, policy, reference (when ``reference``: the KL penalty is on) and critic (when ``critic``);
    under ``model.lora`` the policy carries the ``adapters`` planned for the system's roles. Weights the base model
    lacks (the critic's value head) are drawn from ``seed``: the same on every rank and in every run, whatever drew
    from torch's global generator before."""
    path = base_model_path(model, seed, run_dir, dist)
    torch.manual_seed(seed)
    dtype = model.torch_dtype(cuda=device is not None)
    checkpointed = model.gradient_checkpointing

    def load(cls: Any, *, trained: bool, **kwargs: Any) -> torch.nn.Module:
        loaded = cls.from_pretrained(path, dtype=torch.float32 if trained else dtype, **kwargs)
        if trained:
            mixed_precision(loaded, dtype, "cuda" if device is not None else "cpu")
        # before sharding, so that FSDP wraps the checkpointed layers
        if trained and checkpointed:
            enable_activation_checkpointing(loaded)
        return dist.prepare(loaded.to(device) if device is not None else loaded)

    tokenizer = AutoTokenizer.from_pretrained(path)
    if model.lora is not None:
        if adapters is None:
            raise ValueError("model.lora needs the roles' adapter plan (RoleAdapters.plan)")
        policy = attach(load(AutoModelForCausalLM, trained=True), model.lora, adapters)
        frozen = BaseWeights(policy).eval() if reference else None
        value_model = load(AutoModelForTokenClassification, trained=True, num_labels=1) if critic else None
        return Models(path, dtype, tokenizer, policy, frozen, value_model, adapters)
    policy = load(AutoModelForCausalLM, trained=True)
    frozen = load(AutoModelForCausalLM, trained=False).requires_grad_(False).eval() if reference else None
    value_model = load(AutoModelForTokenClassification, trained=True, num_labels=1) if critic else None
    return Models(path, dtype, tokenizer, policy, frozen, value_model)
