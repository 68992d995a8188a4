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
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mara_bench.harness.toolbase.settings import ToolConfigError
from mara_bench.harness.toolcache.blobs import BlobProblem, deflate, inflate
from mara_bench.harness.toolcache.keys import UnsafeName, check_hash, check_name, recorded_request_problem

INDEX_FILE = "index.sqlite"
BLOB_DIR = "blobs"
MAX_RESPONSE_BYTES = 32 * 2**20
"""Store-wide cap on one response's size (decompressed), whatever the recording settings allow."""


class StoreError(ToolConfigError):
    """A tool store that cannot be used as asked (missing, corrupt, unknown or frozen snapshot)."""


class SnapshotFrozen(StoreError):
    """A write into a snapshot that is frozen (perhaps frozen while a run was recording into it)."""

    def __init__(self, location: str, snapshot: str):
        super().__init__(f"tool store {location}: snapshot {snapshot!r} is frozen; record into a new one")


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


def safe_name(location: str, name: str) -> str:
    """``name`` when it may name a snapshot, else ``StoreError`` naming the store and the rule."""
    try:
        return check_name(name)
    except UnsafeName as err:
        raise StoreError(f"tool store {location}: {err}") from None


def safe_hash(location: str, value: str, what: str) -> str:
    """``value`` when it is a sha256 hex digest (an entry key, a blob name), else ``StoreError``."""
    try:
        return check_hash(value, what)
    except UnsafeName as err:
        raise StoreError(f"tool store {location}: {err}; the store is damaged") from None


def snapshot_digest(pairs: list[tuple[str, str]]) -> str:
    """The id of a snapshot holding these ``(key, blob)`` pairs (order does not matter)."""
    lines = "".join(f"{key} {blob}\n" for key, blob in sorted(pairs))
    return "sha256:" + content_hash(lines.encode())


class ResponseStore(ABC):
    """Blobs and index of one store; subclasses keep the index (SQLite locally, objects remotely)."""

    location: str

    # -- blobs (write-once by content hash, so concurrent writers of the same response agree) --
    def _blob_path(self, digest: str) -> str:
        safe_hash(self.location, digest, "blob name")
        return f"{BLOB_DIR}/{digest[:2]}/{digest}.z"

    def put_blob(self, data: bytes) -> str:
        digest = content_hash(data)
        if not self._exists(self._blob_path(digest)):
            self._write_atomic(self._blob_path(digest), deflate(data))
        return digest

    def get_blob(self, digest: str, limit: int = MAX_RESPONSE_BYTES) -> bytes | None:
        """The response bytes, or ``None`` when the blob is missing, inflates past ``limit`` bytes (decompression
        stops there) or does not match its hash."""
        raw = self._read(self._blob_path(digest))
        if raw is None:
            return None
        try:
            return inflate([raw], min(limit, MAX_RESPONSE_BYTES), digest)
        except BlobProblem:
            return None

    # -- the operations a toolbox and `mara tools` use --
    def record(
        self, snapshot: str, key: str, tool: str, request: dict[str, Any], data: bytes, status: str
    ) -> None:
        blob = self.put_blob(data)
        self.put_entries(snapshot, [(Entry(key, tool, request, blob, status, time.time()), len(data))])
        if not self._exists(self._blob_path(blob)):  # a concurrent eviction removed it between the two steps
            self._write_atomic(self._blob_path(blob), deflate(data))

    def entries(self, snapshot: str) -> list[Entry]:
        """Every entry of ``snapshot``, by key."""
        return list(self.iter_entries(snapshot))

    def verify(self, name: str) -> Snapshot:
        """Snapshot ``name`` once every entry's key is the hash of its recorded request and, when frozen, its
        entries still give its id; else ``StoreError`` in one line (a changed snapshot is never replayed)."""
        snapshot = self.require_snapshot(name)
        pairs = []
        for entry in self.iter_entries(name):
            safe_hash(self.location, entry.blob, "blob name")
            problem = recorded_request_problem(entry.key, entry.tool, entry.request)
            if problem:
                raise StoreError(
                    f"tool store {self.location}: snapshot {name!r} entry {entry.key[:16]}... was changed: "
                    f"{problem}; re-import the snapshot from its tar file or record it again"
                )
            pairs.append((entry.key, entry.blob))
        if snapshot.frozen and snapshot_digest(pairs) != snapshot.digest:
            raise StoreError(
                f"tool store {self.location}: frozen snapshot {name!r} was changed after it was frozen (its entries "
                f"no longer give its id {snapshot.digest}); re-import it from its tar file"
            )
        return snapshot

    def require_snapshot(self, name: str) -> Snapshot:
        """Snapshot ``name``, else ``StoreError`` naming the ones that exist."""
        safe_name(self.location, name)
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
    def iter_entries(self, snapshot: str) -> Iterator[Entry]:
        """Every entry of ``snapshot``, by key, one at a time (a snapshot may hold very many)."""

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
    def put_entries(self, snapshot: str, entries: list[tuple[Entry, int]]) -> None:
        """Add or replace ``entries`` (each with its blob's size in bytes) in ``snapshot``, created when absent, in
        one write (``StoreError`` when it is frozen)."""

    @abstractmethod
    def _exists(self, path: str) -> bool:
        """Whether the file at ``path`` (relative to the store) exists."""

    @abstractmethod
    def _read(self, path: str) -> bytes | None:
        """The bytes at ``path``, or ``None`` when absent."""

    @abstractmethod
    def _write_atomic(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` so that no reader ever sees part of it."""
