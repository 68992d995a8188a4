"""The tool-response store: every recorded tool response, content-addressed, in named snapshots.

Layout of a store (a local folder, or any fsspec URL such as ``s3://bucket/tools``)::

    blobs/ab/abcd....z        one zlib-compressed response per content hash (sha256 of its JSON), written once
    index.sqlite              local folder: the index (SQLite, WAL), safe for several processes writing at once
    index/<snapshot>/<key>.json, snapshots/<name>.json
                              fsspec URL: the same index as one small object per entry (object stores have no
                              shared SQLite); each write is a whole object, so concurrent writers never tear one

An entry maps ``(snapshot, request key)`` to a blob, with the request itself (tool, normalised arguments, the
settings that shape the answer), its status (``ok``/``error``), when it was recorded and when last used. A snapshot
is a named set of entries; once frozen (``mara tools freeze``) it is read-only and gets an id (a digest of its
entries), and eviction never touches it. With ``max_bytes`` a local store evicts the least recently used entries of
unfrozen snapshots once its blobs pass that size, then the blobs no entry uses.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.tools.settings import ToolConfigError

INDEX_FILE = "index.sqlite"
BLOB_DIR = "blobs"


class StoreError(ToolConfigError):
    """A tool store that cannot be used as asked (missing, corrupt, unknown or frozen snapshot)."""


@dataclass(frozen=True)
class Entry:
    """One recorded response's index row."""

    key: str
    """sha256 of the canonical request JSON."""
    tool: str
    request: dict[str, Any]
    """The request as recorded: tool, normalised arguments and the settings that shape the answer."""
    blob: str
    """Content hash (sha256) of the response JSON; the blob's name."""
    status: str
    """``ok`` or ``error`` (a tool error is a response too: replaying it gives the same error)."""
    recorded_at: float


@dataclass(frozen=True)
class Snapshot:
    """A named set of entries."""

    name: str
    entries: int
    frozen: bool
    digest: str | None
    """Digest of the frozen snapshot's ``(key, blob)`` pairs: the snapshot id a log records; ``None`` until frozen."""


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snapshot_digest(pairs: list[tuple[str, str]]) -> str:
    """The id of a snapshot holding these ``(key, blob)`` pairs (order does not matter)."""
    lines = "".join(f"{key} {blob}\n" for key, blob in sorted(pairs))
    return "sha256:" + content_hash(lines.encode())


def is_local(location: str) -> bool:
    return "://" not in location or location.startswith("file://")


def open_store(location: str, *, create: bool, max_bytes: int | None = None) -> ResponseStore:
    """The store at ``location`` (folder or fsspec URL); ``create``: make it when absent, else ``StoreError``."""
    if is_local(location):
        from harness.toolcache.local_store import LocalStore

        return LocalStore(Path(location.removeprefix("file://")), create=create, max_bytes=max_bytes)
    if max_bytes is not None:
        raise StoreError(
            f"tool store {location}: tool_store_max_mb bounds local stores only; drop it and bound the bucket "
            "with its own lifecycle rules"
        )
    from harness.toolcache.remote_store import RemoteStore

    return RemoteStore(location, create=create)


class ResponseStore(ABC):
    """Blobs and index of one store; subclasses keep the index (SQLite locally, objects remotely)."""

    location: str

    # -- blobs (write-once by content hash, so concurrent writers of the same response agree) --
    def _blob_path(self, digest: str) -> str:
        return f"{BLOB_DIR}/{digest[:2]}/{digest}.z"

    def put_blob(self, data: bytes) -> str:
        digest = content_hash(data)
        if not self._exists(self._blob_path(digest)):
            self._write_atomic(self._blob_path(digest), zlib.compress(data, 6))
        return digest

    def get_blob(self, digest: str) -> bytes | None:
        """The response bytes, or ``None`` when the blob is missing or does not match its hash."""
        raw = self._read(self._blob_path(digest))
        if raw is None:
            return None
        try:
            data = zlib.decompress(raw)
        except zlib.error:
            return None
        return data if content_hash(data) == digest else None

    # -- the operations a toolbox and `mara tools` use --
    def lookup(self, snapshot: str, key: str) -> bytes | None:
        entry = self.entry(snapshot, key)
        return None if entry is None else self.get_blob(entry.blob)

    def record(
        self, snapshot: str, key: str, tool: str, request: dict[str, Any], data: bytes, status: str
    ) -> None:
        blob = self.put_blob(data)
        self._put_entry(snapshot, Entry(key, tool, request, blob, status, time.time()), len(data))
        if not self._exists(self._blob_path(blob)):  # a concurrent eviction removed it between the two steps
            self._write_atomic(self._blob_path(blob), zlib.compress(data, 6))

    def require_snapshot(self, name: str) -> Snapshot:
        """Snapshot ``name``, else ``StoreError`` naming the ones that exist."""
        found = {snapshot.name: snapshot for snapshot in self.snapshots()}
        if name not in found:
            names = ", ".join(sorted(found)) or "none yet"
            raise StoreError(
                f"tool store {self.location}: no snapshot {name!r} (snapshots: {names}); record it first with "
                f"-T tool_cache=record -T tool_snapshot={name}, or import it with `mara tools import FILE.tar`"
            )
        return found[name]

    # -- for subclasses --
    @abstractmethod
    def entry(self, snapshot: str, key: str) -> Entry | None:
        """The entry for ``key`` in ``snapshot``, or ``None``."""

    @abstractmethod
    def entries(self, snapshot: str) -> list[Entry]:
        """Every entry of ``snapshot``, by key."""

    @abstractmethod
    def snapshots(self) -> list[Snapshot]:
        """Every snapshot, by name."""

    @abstractmethod
    def ensure_snapshot(self, name: str) -> Snapshot:
        """Snapshot ``name``, created empty when absent."""

    @abstractmethod
    def freeze(self, name: str) -> Snapshot:
        """Make snapshot ``name`` read-only and give it its id (again: no change)."""

    @abstractmethod
    def _put_entry(self, snapshot: str, entry: Entry, size: int) -> None:
        """Add or replace ``entry`` in ``snapshot`` (``StoreError`` when it is frozen); ``size``: its blob's bytes."""

    @abstractmethod
    def _exists(self, path: str) -> bool:
        """Whether the file at ``path`` (relative to the store) exists."""

    @abstractmethod
    def _read(self, path: str) -> bytes | None:
        """The bytes at ``path``, or ``None`` when absent."""

    @abstractmethod
    def _write_atomic(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` so that no reader ever sees part of it."""


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no spaces: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
