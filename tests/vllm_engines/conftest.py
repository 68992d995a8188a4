"""The ``vllm`` test group: one vLLM-friendly tiny model (64-dim heads) and one engine per kind per session
(loading one takes about a minute on CPU)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache for the CPU build (shared machines)


@pytest.fixture(scope="session")
def vllm_model_dir(tmp_path_factory):
    from mara_bench.harness.tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-256"), hidden_size=256)


@pytest.fixture(scope="session", params=["tiny-256", "smollm2-135m"])
def eval_model_dir(request, vllm_model_dir):
    """The models the eval tests serve on both engines: the tiny one and SmolLM2-135M, the real model in the box
    (skipped where it is not installed)."""
    return request.getfixturevalue("smollm2") if request.param == "smollm2-135m" else vllm_model_dir
