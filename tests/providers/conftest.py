"""Tiny models built once per test session for the provider tests (offline, about a second each)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory) -> Path:
    from mara_bench.harness.tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen2"), arch="qwen2", seed=0)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    from mara_bench.harness.tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"), arch="llama", seed=0)


@pytest.fixture(scope="session")
def qwen_pair(tiny_qwen):
    """The tiny Qwen2 model and tokenizer, loaded."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_qwen).eval(), AutoTokenizer.from_pretrained(tiny_qwen)
