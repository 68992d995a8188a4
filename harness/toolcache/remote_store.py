"""A tool-response store at an fsspec URL (S3, GCS, ...): the blobs, and the index as one JSON object per entry.

Object stores have no shared SQLite, so each index entry and each snapshot's record is a whole object, written in one
put: two writers never tear one, and the last write of the same entry wins. No size bound (use the bucket's own
lifecycle rules).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from harness.toolcache.store import (
    Entry,
    ResponseStore,
    Snapshot,
    StoreError,
    canonical_json,
    snapshot_digest,
)


class RemoteStore(ResponseStore):
    """A store at an fsspec URL: each index entry and snapshot is one JSON object, written whole."""

    def __init__(self, url: str, *, create: bool):
        import fsspec

        self.location = url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.location)
        if not create and not self.fs.exists(f"{self.root}/snapshots"):
            raise StoreError(
                f"tool store {url}: not found (no snapshots/ there); record one with -T tool_cache=record "
                f"-T tool_store={url}"
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
        self.fs.pipe_file(self._path(path), data)

    def _json(self, path: str) -> Any:
        raw = self._read(path)
        return None if raw is None else json.loads(raw)

    def entry(self, snapshot: str, key: str) -> Entry | None:
        data = self._json(f"index/{snapshot}/{key}.json")
        return None if data is None else Entry(**data)

    def entries(self, snapshot: str) -> list[Entry]:
        folder = self._path(f"index/{snapshot}")
        names = sorted(self.fs.ls(folder, detail=False)) if self.fs.exists(folder) else []
        return [Entry(**json.loads(self.fs.cat_file(name))) for name in names]

    def snapshots(self) -> list[Snapshot]:
        folder = self._path("snapshots")
        names = sorted(self.fs.ls(folder, detail=False)) if self.fs.exists(folder) else []
        found = []
        for name in names:
            data = json.loads(self.fs.cat_file(name))
            count = len(self.entries(data["name"]))
            found.append(Snapshot(data["name"], count, data.get("digest") is not None, data.get("digest")))
        return found

    def ensure_snapshot(self, name: str) -> Snapshot:
        if not self._exists(f"snapshots/{name}.json"):
            self._write_atomic(f"snapshots/{name}.json", canonical_json({"name": name}).encode())
        return self.require_snapshot(name)

    def freeze(self, name: str) -> Snapshot:
        snapshot = self.require_snapshot(name)
        if not snapshot.frozen:
            digest = snapshot_digest([(e.key, e.blob) for e in self.entries(name)])
            self._write_atomic(
                f"snapshots/{name}.json", canonical_json({"name": name, "digest": digest}).encode()
            )
        return self.require_snapshot(name)

    def _put_entry(self, snapshot: str, entry: Entry, size: int) -> None:  # noqa: ARG002
        if self.ensure_snapshot(snapshot).frozen:
            raise StoreError(
                f"tool store {self.location}: snapshot {snapshot!r} is frozen; record into a new one"
            )
        self._write_atomic(f"index/{snapshot}/{entry.key}.json", canonical_json(asdict(entry)).encode())
