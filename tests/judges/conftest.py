"""Judges test set-up: every test gets its own Inspect generate cache, so cached grader replies never leak."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_generate_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
