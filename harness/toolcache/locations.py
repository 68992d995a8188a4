"""Which store a location names, opened: a folder (or ``file://`` URL) is a ``LocalStore``, any other fsspec URL
a ``RemoteStore``. Above both store kinds, so ``store`` (what they share) imports neither.
"""

from __future__ import annotations

from pathlib import Path

from mara_bench.harness.toolcache.local_store import LocalStore
from mara_bench.harness.toolcache.remote_store import RemoteStore
from mara_bench.harness.toolcache.store import ResponseStore, StoreError


def is_local(location: str) -> bool:
    return "://" not in location or location.startswith("file://")


def open_store(location: str, *, create: bool, max_bytes: int | None = None) -> ResponseStore:
    """The store at ``location`` (folder or fsspec URL); ``create``: make it when absent, else ``StoreError``."""
    if is_local(location):
        return LocalStore(Path(location.removeprefix("file://")), create=create, max_bytes=max_bytes)
    if max_bytes is not None:
        raise StoreError(
            f"tool store {location}: tool_store_max_mb bounds local stores only; drop it and bound the bucket "
            "with its own lifecycle rules"
        )
    return RemoteStore(location, create=create)
