"""The tiny model builder: deterministic, loadable, chat template with tools, <think> kept."""

from __future__ import annotations

import json

import pytest
from transformers import AutoConfig, AutoTokenizer

from mara_bench.harness.tinymodel import build_tiny_model, main


def test_same_seed_gives_identical_files_and_other_seed_other_weights(tiny_qwen, tmp_path):
    again = build_tiny_model(tmp_path / "again", arch="qwen2", seed=0)
    other = build_tiny_model(tmp_path / "other", arch="qwen2", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (again / name).read_bytes() == (tiny_qwen / name).read_bytes()
    assert (other / "model.safetensors").read_bytes() != (tiny_qwen / "model.safetensors").read_bytes()
    assert (other / "tokenizer.json").read_bytes() == (tiny_qwen / "tokenizer.json").read_bytes()


@pytest.mark.parametrize(("fixture", "model_type"), [("tiny_qwen", "qwen2"), ("tiny_llama", "llama")])
def test_config_is_the_tiny_shape(request, fixture, model_type):
    path = request.getfixturevalue(fixture)
    config = AutoConfig.from_pretrained(path)
    assert config.model_type == model_type
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (32, 2, 4)
    assert config.num_key_value_heads == 2
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert 400 <= len(tokenizer) == config.vocab_size <= 1000
    generation = json.loads((path / "generation_config.json").read_text())
    assert generation["eos_token_id"] == tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_chat_template_renders_chatml_with_tools_and_keeps_think(tiny_qwen):
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen)
    tools = [{"type": "function", "function": {"name": "search", "description": "web", "parameters": {}}}]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "search", "arguments": {"q": "x"}}}],
        },
        {"role": "tool", "content": "Paris"},
    ]
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert '"name": "search"' in text
    assert '<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call><|im_end|>' in text
    assert "<tool_response>\nParis\n</tool_response>" in text
    assert text.endswith("<|im_start|>assistant\n")
    ids = tokenizer("<think>hm</think> 42<|im_end|>")["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "<think>hm</think> 42"


def test_cli_writes_a_llama_model(tmp_path, capsys):
    assert main([str(tmp_path / "m"), "--arch", "llama", "--seed", "3", "--hidden-size", "256"]) == 0
    config = AutoConfig.from_pretrained(tmp_path / "m")
    assert (config.model_type, config.hidden_size, config.intermediate_size) == ("llama", 256, 512)
    assert config.hidden_size // config.num_attention_heads == 64  # a head size GPU attention kernels take
    assert "tiny llama model written to" in capsys.readouterr().out


def test_unknown_architecture_and_bad_hidden_size_are_clear_errors(tmp_path):
    with pytest.raises(
        ValueError, match="unknown tiny-model architecture 'gpt2'; choose one of qwen2, llama"
    ):
        build_tiny_model(tmp_path, arch="gpt2")
    with pytest.raises(ValueError, match="hidden_size must be a positive multiple of 4 .*got 30"):
        build_tiny_model(tmp_path, hidden_size=30)
