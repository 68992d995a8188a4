"""``auto``'s engine choice: by measured cost (vLLM's start-up against its cheaper tokens) where the job's tokens
are known, by size otherwise; every decision logged in one line with its reason; ``local/`` passes
``-M expected_tokens`` on."""

from __future__ import annotations

import importlib.util
import logging
from types import SimpleNamespace

import pytest
import torch

from mara_bench.harness.providers import backends
from mara_bench.harness.providers.backends import (
    CPU_COSTS,
    REFERENCE_BYTES,
    EngineCosts,
    backend_choice,
    breakeven_tokens,
    choose_backend,
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


def _checkpoint(tmp_path, size: int):
    path = tmp_path / f"model-{size}"
    path.mkdir()
    with open(path / "model.safetensors", "wb") as weights:
        weights.truncate(size)  # sparse: the size is all that counts
    return path


def test_costs_weigh_the_start_up_against_cheaper_tokens():
    costs = EngineCosts(vllm_start_cpu_s=40.0, ours_tokens_per_cpu_s=100.0, vllm_tokens_per_cpu_s=200.0)
    ours, vllm = costs.job_cpu_s(8_000, REFERENCE_BYTES)
    assert (ours, vllm) == (80.0, 80.0)
    assert costs.job_cpu_s(8_000, 2 * REFERENCE_BYTES) == (160.0, 120.0)  # tokens cost more on bigger weights
    assert breakeven_tokens(REFERENCE_BYTES, costs) == 8_000
    assert breakeven_tokens(10 * REFERENCE_BYTES, costs) == 800  # a bigger model pays sooner
    as_fast = EngineCosts(vllm_start_cpu_s=40.0, ours_tokens_per_cpu_s=200.0, vllm_tokens_per_cpu_s=200.0)
    assert breakeven_tokens(REFERENCE_BYTES, as_fast) is None  # vLLM never pays for its start-up


def test_auto_takes_vllm_exactly_where_the_job_is_cheaper_there(tmp_path, vllm_on_cpu):
    size = 4 * REFERENCE_BYTES
    model = _checkpoint(tmp_path, size)
    tokens = breakeven_tokens(size)
    assert tokens is not None, "the measured costs make vLLM pay on a checkpoint 4x the 76M model's"
    assert choose_backend("auto", model, expected_tokens=tokens - 1) == "hf"
    assert choose_backend("auto", model, expected_tokens=tokens) == "vllm"
    assert choose_backend("auto", model) == "vllm"  # the job's tokens unknown: by size alone
    assert choose_backend("hf", model, expected_tokens=10**9) == "hf"  # asked for by name
    assert choose_backend("vllm", model, expected_tokens=1) == "vllm"


def test_below_the_size_floor_and_on_a_gpu_the_costs_are_not_used(tmp_path, vllm_on_cpu, monkeypatch):
    tiny = _checkpoint(tmp_path, backends.AUTO_VLLM_MIN_BYTES - 1)
    assert choose_backend("auto", tiny, expected_tokens=10**9) == "hf"
    large = _checkpoint(tmp_path, 4 * REFERENCE_BYTES)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    choice = backend_choice("auto", large, expected_tokens=1)
    assert choice.backend == "vllm" and "measured on the CPU only" in choice.reason


def test_the_decision_and_its_reason_are_one_logged_line(tmp_path, vllm_on_cpu, caplog):
    model = _checkpoint(tmp_path, REFERENCE_BYTES)
    ours, vllm = CPU_COSTS.job_cpu_s(512, REFERENCE_BYTES)
    with caplog.at_level(logging.INFO, logger=backends.__name__):
        choose_backend("auto", model, expected_tokens=512)
    [record] = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    assert line.startswith(
        "generation engine hf (-M backend / rollout.backend auto): 512 expected tokens on "
        f"{REFERENCE_BYTES / 2**20:,.0f} MiB of weights"
    )
    assert f"about {ours:,.0f} CPU-s on ours, {vllm:,.0f} on vLLM" in line


def test_local_takes_the_expected_tokens_as_an_option():
    assert LocalOptions.parse({"expected_tokens": 4096}).expected_tokens == 4096
    with pytest.raises(ValueError, match="expected_tokens: must be >= 1, got 0"):
        LocalOptions.parse({"expected_tokens": 0})
