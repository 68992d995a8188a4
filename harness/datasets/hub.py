"""Rows of a benchmark from the Hugging Face Hub at its pinned revision (honouring ``HF_HUB_OFFLINE``).

A gated set needs a token: without one we stop with the fix (set ``HF_TOKEN`` after accepting the terms, or pass a
local copy with ``-T data=``) instead of letting the hub library fail with a 401 deep inside a run.
"""

from __future__ import annotations

import os
from typing import Any

from mara_bench.harness.datasets.specs import BenchmarkSpec


class DatasetUnavailableError(RuntimeError):
    """A benchmark could not be read from the Hugging Face Hub."""


def _token() -> str | None:
    from huggingface_hub import get_token

    return get_token()


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def resolved_revision(spec: BenchmarkSpec) -> str:
    """The commit read: the pinned revision, else the hub's current sha for the default branch when reachable."""
    if spec.revision:
        return spec.revision
    if _offline():
        return "unpinned (offline: read from the local Hugging Face cache)"
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(spec.hf_path, token=_token()).sha or "unpinned"
    except Exception as error:  # provenance only; the rows were already read
        return f"unpinned (sha not resolvable: {type(error).__name__})"


def hub_rows(spec: BenchmarkSpec) -> list[dict[str, Any]]:
    """Every row of the spec's split, read with ``datasets`` at the pinned revision."""
    token = _token()
    if spec.gated and not token:
        raise DatasetUnavailableError(
            f"{spec.name}: {spec.hf_path} is a gated dataset and no Hugging Face token is set. Accept its terms at "
            f"{spec.hf_url} and set HF_TOKEN, or pass a local copy with -T data=<file or folder>."
        )
    import datasets

    try:
        table = datasets.load_dataset(
            spec.hf_path, spec.hf_config, split=spec.split, revision=spec.revision, token=token
        )
    except Exception as error:  # every hub failure becomes one actionable message
        hint = (
            "HF_HUB_OFFLINE is set and the dataset is not in the local cache"
            if _offline()
            else "check the network, your HF_TOKEN and that you accepted the dataset's terms"
        )
        raise DatasetUnavailableError(
            f"{spec.name}: could not load {spec.hf_path} (config {spec.hf_config}, split {spec.split}, "
            f"revision {spec.revision or 'default'}): {type(error).__name__}: {error}. {hint}; "
            f"or pass a local copy with -T data=<file or folder>."
        ) from error
    return [dict(row) for row in table]
