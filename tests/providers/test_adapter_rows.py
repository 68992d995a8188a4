"""Mixed-adapter batches: rows of different LoRA adapters of one peft model decode in one batch, each exactly as it
decodes alone under its adapter (greedy, and sampled with a fixed seed), and an unknown adapter is refused."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.adapter_rows import BASE, adapter_rows
from mara_bench.harness.providers.generation import generate
from mara_bench.harness.providers.loading import peft_wrapping
from mara_bench.harness.providers.sampling import Sampling

ADAPTERS = ("planner", "worker", "critic")
QUESTIONS = ("What is 2 + 2?", "Name a colour.", "Count to three.", "Say hello.")


@pytest.fixture(scope="module")
def multi_adapter(tiny_qwen):
    """The tiny model with three LoRA adapters of random (non-zero) weights, and its tokenizer."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(3)
    settings = LoraConfig(
        r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "up_proj"], init_lora_weights=False
    )
    with peft_wrapping():
        model = get_peft_model(
            AutoModelForCausalLM.from_pretrained(tiny_qwen), settings, adapter_name=ADAPTERS[0]
        )
    for name in ADAPTERS[1:]:
        model.add_adapter(name, settings)
    return model.eval(), AutoTokenizer.from_pretrained(tiny_qwen)


def alone(model, tokenizer, prompt: list[int], sampling: Sampling):
    """The row decoded by itself with its adapter as the model's only active one (no mixed-batch routing)."""
    model.set_adapter(sampling.adapter)
    try:
        [done] = generate(model, tokenizer, [prompt], dataclasses.replace(sampling, adapter=None))
    finally:
        model.set_adapter(ADAPTERS[0])
    return done


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_each_row_of_a_mixed_batch_decodes_as_its_adapter_alone(multi_adapter, temperature):
    model, tokenizer = multi_adapter
    prompts = [render_prompt(tokenizer, [{"role": "user", "content": q}]) for q in QUESTIONS]
    rows = [(prompt, adapter) for prompt in prompts for adapter in ADAPTERS]
    settings = [
        Sampling(max_tokens=12, temperature=temperature, seed=100 + i, adapter=adapter)
        for i, (_, adapter) in enumerate(rows)
    ]
    mixed = generate(model, tokenizer, [prompt for prompt, _ in rows], settings)
    for (prompt, _), sampling, together in zip(rows, settings, mixed, strict=True):
        single = alone(model, tokenizer, prompt, sampling)
        assert together.response_ids == single.response_ids
        assert together.logprobs == pytest.approx(single.logprobs, abs=1e-5)
    # the adapters do differ: the same prompt and seed decode differently under at least two of them
    per_prompt = [
        {tuple(done.response_ids) for done in mixed[i : i + len(ADAPTERS)]} for i in range(0, len(rows), 3)
    ]
    assert any(len(outputs) > 1 for outputs in per_prompt)


def test_routing_names_every_row_and_refuses_an_unknown_adapter(multi_adapter):
    model, tokenizer = multi_adapter
    ids = torch.tensor([render_prompt(tokenizer, [{"role": "user", "content": QUESTIONS[0]}])] * 2)
    with torch.no_grad():
        with adapter_rows(model, [BASE, "worker"]):
            routed = model(input_ids=ids).logits
        with model.disable_adapter():
            base = model(input_ids=ids[:1]).logits
    assert torch.allclose(routed[0], base[0], atol=1e-5)
    assert not torch.allclose(routed[1], base[0], atol=1e-3)
    with (
        pytest.raises(ValueError, match=r"no adapter named \['judge'\]"),
        adapter_rows(model, ["judge", "worker"]),
    ):
        pass
