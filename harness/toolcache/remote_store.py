"""A tool-response store at an fsspec URL (S3, GCS, ``local://``, ``memory://``, ...): the blobs, and the index as one
JSON object per entry.

Object stores have no shared SQLite, so each index entry and each snapshot's record is a whole object, written in one
put: two writers never tear one, and the last write of the same entry wins. Every path is built from checked
components (snapshot names in the safe alphabet, keys and blob names as sha256 hex digests), so nothing read from a
manifest or a listing can point outside the store; parent folders are created on filesystems that need them. No size
bound (use the bucket's own lifecycle rules).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from mara_bench.harness.redaction import redact_text, redact_url
from mara_bench.harness.toolcache.keys import canonical_json
from mara_bench.harness.toolcache.store import (
    Entry,
    ResponseStore,
    Snapshot,
    SnapshotFrozen,
    StoreError,
    safe_hash,
    safe_name,
    snapshot_digest,
)

MAX_INDEX_OBJECT_BYTES = 4 * 2**20
"""Largest index object (an entry or a snapshot record) read; a larger one is a damaged store."""


class RemoteStore(ResponseStore):
    """A store at an fsspec URL: each index entry and snapshot is one JSON object, written whole."""

    def __init__(self, url: str, *, create: bool):
        import fsspec

        self.location = redact_url(url.rstrip("/"))
        try:
            self.fs, self.root = fsspec.core.url_to_fs(url.rstrip("/"))
        except (ImportError, ValueError) as err:
            problem = redact_text(str(err)).splitlines()[0] if str(err) else type(err).__name__
            raise StoreError(
                f"tool store {self.location}: cannot open it ({problem}); install the fsspec package for its "
                "scheme, or give a folder"
            ) from None
        if not create and not self.fs.exists(f"{self.root}/snapshots"):
            raise StoreError(
                f"tool store {self.location}: not found (no snapshots/ there); record one with -T tool_cache=record "
                f"-T tool_store={self.location}"
            )

    def _path(self, path: str) -> str:
        return f"{self.root}/{path}"

    def _exists(self, path: str) -> bool:
        return self.fs.exists(self._path(path))

    def _read(self, path: str) -> bytes | None:
        try:
            return self.fs.cat_file(self._path(path))
        except FileNotFoundError:
            return None

    def _write_atomic(self, path: str, data: bytes) -> None:
        full = self._path(path)
        self.fs.makedirs(full.rsplit("/", 1)[0], exist_ok=True)
        self.fs.pipe_file(full, data)

    def _object(self, path: str) -> Any:
        """The JSON object at ``path`` (a full path), ``StoreError`` naming it when it is not one."""
        try:
            if self.fs.size(path) > MAX_INDEX_OBJECT_BYTES:
                raise ValueError(f"over {MAX_INDEX_OBJECT_BYTES:,} bytes")
            return json.loads(self.fs.cat_file(path))
        except (ValueError, RecursionError) as err:
            raise StoreError(
                f"tool store {self.location}: {path} is not an index object ({type(err).__name__}); the store "
                "is damaged: re-import its snapshots"
            ) from None

    def _entry(self, path: str) -> Entry:
        data = self._object(path)
        try:
            return Entry(**data)
        except TypeError:
            raise StoreError(
                f"tool store {self.location}: {path} is not an index entry; the store is damaged: re-import its "
                "snapshots"
            ) from None

    def entry(self, snapshot: str, key: str) -> Entry | None:
        key = safe_hash(self.location, key, "entry key")
        path = self._path(f"index/{safe_name(self.location, snapshot)}/{key}.json")
        return self._entry(path) if self.fs.exists(path) else None

    def iter_entries(self, snapshot: str) -> Iterator[Entry]:
        folder = self._path(f"index/{safe_name(self.location, snapshot)}")
        names = sorted(self.fs.ls(folder, detail=False)) if self.fs.exists(folder) else []
        for name in names:
            yield self._entry(name)

    def snapshots(self) -> list[Snapshot]:
        folder = self._path("snapshots")
        names = sorted(self.fs.ls(folder, detail=False)) if self.fs.exists(folder) else []
        found = []
        for path in names:
            data = self._object(path)
            name = data.get("name") if isinstance(data, dict) else None
            if safe_name(self.location, name) + ".json" != path.rsplit("/", 1)[-1]:
                raise StoreError(
                    f"tool store {self.location}: {path} names another snapshot; the store is damaged"
                )
            count = sum(1 for _ in self.iter_entries(name))
            found.append(Snapshot(name, count, data.get("digest") is not None, data.get("digest")))
        return found

    def ensure_snapshot(self, name: str) -> Snapshot:
        if not self._exists(f"snapshots/{safe_name(self.location, name)}.json"):
            self._write_atomic(f"snapshots/{name}.json", canonical_json({"name": name}).encode())
        return self.require_snapshot(name)

    def freeze(self, name: str) -> Snapshot:
        snapshot = self.require_snapshot(name)
        if not snapshot.frozen:
            digest = snapshot_digest([(e.key, e.blob) for e in self.iter_entries(name)])
            self._write_atomic(
                f"snapshots/{name}.json", canonical_json({"name": name, "digest": digest}).encode()
            )
        return self.require_snapshot(name)

    def put_entries(self, snapshot: str, entries: list[tuple[Entry, int]]) -> None:
        if self.ensure_snapshot(snapshot).frozen:
            raise SnapshotFrozen(self.location, snapshot)
        for entry, _ in entries:
            key = safe_hash(self.location, entry.key, "entry key")
            self._write_atomic(f"index/{snapshot}/{key}.json", canonical_json(asdict(entry)).encode())
