"""LoRA adapters with random weights for the provider tests (a module, not a fixture: tests call it with paths)."""

from __future__ import annotations

import json
from pathlib import Path


def save_lora_adapter(base_dir: Path, out_dir: Path, *, hidden_size: int | None = None) -> Path:
    """Save a LoRA adapter with random (non-zero) weights for the model in ``base_dir``.

    With ``hidden_size`` the adapter is made for a differently sized model of the same architecture, so it does
    not fit ``base_dir``'s model.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from mara_bench.harness.providers.loading import peft_wrapping

    torch.manual_seed(1)
    if hidden_size is None:
        model = AutoModelForCausalLM.from_pretrained(base_dir)
    else:
        config = AutoConfig.from_pretrained(base_dir)
        config.hidden_size, config.intermediate_size = hidden_size, 2 * hidden_size
        model = AutoModelForCausalLM.from_config(config)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    with peft_wrapping():
        adapted = get_peft_model(model, lora)
    adapted.save_pretrained(out_dir)
    # peft records the base by the path it was loaded from; make that the tiny model directory
    config_file = out_dir / "adapter_config.json"
    config_file.write_text(
        json.dumps({**json.loads(config_file.read_text()), "base_model_name_or_path": str(base_dir)})
    )
    return out_dir
