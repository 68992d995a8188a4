"""``auto``'s engine choice: by measured cost (vLLM's start-up against its cheaper tokens, a token's cost from the
architecture's FLOPs and the dtype) where the job is known, by size otherwise; the rule agrees with every row of
``docs/experiments/engines.md``; every decision is logged in one line with its reason; ``local/`` passes
``-M expected_tokens`` on."""

from __future__ import annotations

import importlib.util
import json
import logging
from types import SimpleNamespace

import pytest
import torch

from benchmarks._engine_costs import measured_rows
from mara_bench.harness.providers import backends
from mara_bench.harness.providers.backends import (
    CPU_COSTS,
    EngineCosts,
    EngineRate,
    backend_choice,
    choose_backend,
    flops_per_token,
    job_flops,
)
from mara_bench.harness.providers.local_options import LocalOptions

FIND_SPEC = importlib.util.find_spec


@pytest.fixture
def vllm_on_cpu(monkeypatch):
    """vLLM 'installed' (nothing imports it), no GPU."""
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name: SimpleNamespace(has_location=True) if name == "vllm" else FIND_SPEC(name),
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _shape(hidden: int, layers: int, heads: int, kv_heads: int, vocab: int, intermediate: int) -> dict:
    return {
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "vocab_size": vocab,
    }


SMOLLM2 = _shape(576, 30, 9, 3, 49152, 1536)


def _checkpoint(tmp_path, name: str, config: dict | None, size: int = 0):
    path = tmp_path / name
    path.mkdir()
    if config is not None:
        (path / "config.json").write_text(json.dumps(config))
    with open(path / "model.safetensors", "wb") as weights:
        weights.truncate(size)  # sparse: the size is all that counts
    return path


def test_a_tokens_flops_are_its_linear_layers_multiplies(tiny_qwen):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_qwen)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert flops_per_token(tiny_qwen) == 2 * linear


def test_only_a_dense_decoders_config_is_costed(tmp_path):
    assert flops_per_token(_checkpoint(tmp_path, "smollm2", SMOLLM2)) == 268_959_744  # 2 x its 134.5M weights
    assert flops_per_token(_checkpoint(tmp_path, "none", None)) is None
    assert flops_per_token(_checkpoint(tmp_path, "moe", {**SMOLLM2, "num_local_experts": 8})) is None
    assert flops_per_token(_checkpoint(tmp_path, "dense", {**SMOLLM2, "num_experts": None})) == 268_959_744
    broken = _checkpoint(tmp_path, "broken", None)
    (broken / "config.json").write_text("{not json")
    assert flops_per_token(broken) is None
    assert flops_per_token(_checkpoint(tmp_path, "gpt2", {"n_embd": 768, "n_layer": 12})) is None
    assert (
        job_flops(_checkpoint(tmp_path, "prompted", SMOLLM2), prompt_tokens_per_token=1.0) == 2 * 268_959_744
    )


def test_costs_weigh_the_start_up_against_cheaper_tokens():
    costs = EngineCosts(
        vllm_start_cpu_s=40.0,
        ours=EngineRate(float32_flops_per_cpu_s=1e9, bfloat16_flops_per_cpu_s=2e9, cpu_s_per_token=0.0),
        vllm=EngineRate(float32_flops_per_cpu_s=2e9, bfloat16_flops_per_cpu_s=2e9, cpu_s_per_token=1e-3),
    )
    assert costs.job_cpu_s(8_000, 2e7, "float32") == (160.0, 40.0 + 8_000 * 0.011)
    assert costs.breakeven_tokens(2e7, "float32") == 4_445  # 40 CPU-s / (20 - 11 ms) a token
    assert costs.breakeven_tokens(1e6, "float32") is None  # vLLM's fixed cost outweighs its faster multiplies
    assert costs.breakeven_tokens(2e7, "bfloat16") is None  # as fast per FLOP: never pays
    assert costs.job_cpu_s(1, 2e7, "float16") is None and costs.breakeven_tokens(2e7, "float16") is None


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    return {row.name: row for row in measured_rows(tmp_path_factory.mktemp("engine-table"))}


NAMES = ("tiny-256-float32", "76M-float32", "76M-bfloat16", "smollm2-135m-float32")


def test_the_table_has_the_rows_named_here(measured):
    assert set(measured) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_rule_agrees_with_the_measured_rows(measured, name):
    """Where vLLM pays moves with the concurrency (3.4x between 8 and 32 on the 76M shape) and the prompts'
    length; the rule's break-even over the row's prompt lengths overlaps the measured break-evens over its
    concurrencies, and it never pays where it never paid."""
    row = measured[name]
    rule, breakevens = row.rule_breakevens(), row.breakevens()
    if None in breakevens:
        assert breakevens == rule == [None, None]
        return
    assert None not in rule and None not in breakevens
    assert min(rule) <= max(breakevens) and max(rule) >= min(breakevens), (rule, breakevens)


@pytest.mark.parametrize("name", NAMES)
def test_the_tables_jobs_stay_on_our_engine(vllm_on_cpu, measured, name):
    """The table's last column: a job of N x 32 tokens, where vLLM's start-up is not repaid."""
    row = measured[name]
    for concurrent in (1, 8, 32):
        assert choose_backend("auto", row.model_dir, expected_tokens=concurrent * 32, dtype=row.dtype) == "hf"


def test_auto_takes_vllm_exactly_where_the_job_is_cheaper_there(tmp_path, vllm_on_cpu):
    model = _checkpoint(tmp_path, "smollm2", SMOLLM2, size=513 * 2**20)
    flops = job_flops(model)
    assert flops is not None
    tokens = CPU_COSTS.breakeven_tokens(flops, "float32")
    assert tokens is not None
    assert choose_backend("auto", model, expected_tokens=tokens - 1, dtype="float32") == "hf"
    assert choose_backend("auto", model, expected_tokens=tokens, dtype="float32") == "vllm"
    later = CPU_COSTS.breakeven_tokens(flops, "bfloat16")
    assert later is not None and later > tokens  # both engines faster in bfloat16: the start-up repaid later
    assert choose_backend("auto", model, expected_tokens=tokens, dtype="bfloat16") == "hf"
    assert choose_backend("hf", model, expected_tokens=10**9, dtype="float32") == "hf"  # asked for by name
    assert choose_backend("vllm", model, expected_tokens=1, dtype="float32") == "vllm"


def test_without_a_cost_auto_goes_by_size(tmp_path, vllm_on_cpu, monkeypatch):
    large = _checkpoint(tmp_path, "large", SMOLLM2, size=backends.AUTO_VLLM_MIN_BYTES)
    small = _checkpoint(tmp_path, "small", None, size=backends.AUTO_VLLM_MIN_BYTES - 1)
    unknown = _checkpoint(tmp_path, "unknown", None, size=backends.AUTO_VLLM_MIN_BYTES)
    assert backend_choice("auto", large, dtype="float32").reason.endswith(
        "token count unknown, so by size alone"
    )
    assert choose_backend("auto", small, expected_tokens=10**9, dtype="float32") == "hf"
    assert "no measured costs" in backend_choice("auto", unknown, expected_tokens=1, dtype="float32").reason
    assert "no measured costs" in backend_choice("auto", large, expected_tokens=1, dtype="float16").reason
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    choice = backend_choice("auto", large, expected_tokens=1, dtype="float32")
    assert choice.backend == "vllm" and "measured on the CPU only" in choice.reason


def test_the_decision_and_its_reason_are_one_logged_line(tmp_path, vllm_on_cpu, caplog):
    model = _checkpoint(tmp_path, "smollm2", SMOLLM2)
    flops = job_flops(model)
    assert flops is not None
    costs = CPU_COSTS.job_cpu_s(512, flops, "float32")
    assert costs is not None
    with caplog.at_level(logging.INFO, logger=backends.__name__):
        choose_backend("auto", model, expected_tokens=512, dtype="float32")
    [record] = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    assert line.startswith(
        "generation engine hf (-M backend / rollout.backend auto): 512 expected tokens at "
        f"{flops / 1e6:,.0f} MFLOP each (float32, prompts included)"
    )
    assert f"about {costs[0]:,.0f} CPU-s on ours, {costs[1]:,.0f} on vLLM" in line


def test_local_takes_the_expected_tokens_as_an_option():
    assert LocalOptions.parse({"expected_tokens": 4096}).expected_tokens == 4096
    with pytest.raises(ValueError, match="expected_tokens: must be >= 1, got 0"):
        LocalOptions.parse({"expected_tokens": 0})
