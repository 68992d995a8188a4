"""Tiny models built once per test session for the provider tests (offline, about a second each)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory) -> Path:
    from harness.tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), arch="qwen2", seed=0)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    from harness.tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"), arch="llama", seed=0)


@pytest.fixture(scope="session")
def qwen_pair(tiny_qwen):
    """The tiny Qwen2 model and tokenizer, loaded."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_qwen).eval(), AutoTokenizer.from_pretrained(tiny_qwen)


def save_lora_adapter(base_dir: Path, out_dir: Path, *, hidden_size: int | None = None) -> Path:
    """Save a LoRA adapter with random (non-zero) weights for the model in ``base_dir``.

    With ``hidden_size`` the adapter is made for a differently sized model of the same architecture, so it does
    not fit ``base_dir``'s model.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(1)
    if hidden_size is None:
        model = AutoModelForCausalLM.from_pretrained(base_dir)
    else:
        config = AutoConfig.from_pretrained(base_dir)
        config.hidden_size, config.intermediate_size = hidden_size, 2 * hidden_size
        model = AutoModelForCausalLM.from_config(config)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    adapted = get_peft_model(model, lora)
    adapted.save_pretrained(out_dir)
    # peft records the base by the path it was loaded from; make that the tiny model directory
    config_file = out_dir / "adapter_config.json"
    config_file.write_text(
        json.dumps({**json.loads(config_file.read_text()), "base_model_name_or_path": str(base_dir)})
    )
    return out_dir
