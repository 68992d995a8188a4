"""Shared test set-up: keep every test offline and give tests the shared benchmark data when CI provides it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("INSPECT_LOG_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "mara-test-logs"))

# every task file imported (after the offline switches), so every benchmark is registered, as under Inspect
import mara_bench.catalog  # noqa: E402, F401


def _offline_token_count(*args, **kwargs) -> int:
    """Inspect counts tokens with tiktoken (a download) when an output has no usage; estimate instead."""
    text = " ".join(str(a) for a in args)
    return max(1, len(text) // 4)


@pytest.fixture(autouse=True)
def _no_tiktoken(monkeypatch):
    import inspect_ai.model._model as model_module

    if hasattr(model_module, "count_text_tokens"):
        monkeypatch.setattr(model_module, "count_text_tokens", _offline_token_count, raising=False)


@pytest.fixture
def data_dir() -> Path:
    """The shared benchmark data (``MARA_DATA_DIR``); tests using it skip when it is not set."""
    value = os.environ.get("MARA_DATA_DIR")
    if not value:
        pytest.skip("MARA_DATA_DIR is not set (CI sets it to ../shared/data)")
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"MARA_DATA_DIR={value} is not a directory")
    return path


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked ``vllm`` skip, with the reason, where the vllm package is not installed."""
    from mara_bench.harness.providers.backends import vllm_ready

    if vllm_ready():
        return
    skip = pytest.mark.skip(
        reason="needs the vllm package (bash scripts/setup.sh --vllm builds .venv-vllm with its CPU build)"
    )
    for item in items:
        if "vllm" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct's converted checkpoint (``mara models get smollm2-135m``, which ``scripts/setup.sh``
    runs); tests using it skip, with the command, where it is not installed."""
    from mara_bench.harness.packaged_models import PackagedModelError, installed_model

    try:
        return installed_model("smollm2-135m")
    except PackagedModelError as err:
        pytest.skip(str(err))
