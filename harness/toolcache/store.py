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

import contextlib
import hashlib
import json
import os
import sqlite3
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.tools.settings import ToolConfigError

INDEX_FILE = "index.sqlite"
BLOB_DIR = "blobs"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots(name TEXT PRIMARY KEY, created_at REAL NOT NULL, frozen_at REAL,
    digest TEXT);
CREATE TABLE IF NOT EXISTS entries(snapshot TEXT NOT NULL, key TEXT NOT NULL, tool TEXT NOT NULL,
    request TEXT NOT NULL, blob TEXT NOT NULL, status TEXT NOT NULL, recorded_at REAL NOT NULL,
    used_at REAL NOT NULL, PRIMARY KEY(snapshot, key));
CREATE TABLE IF NOT EXISTS blobs(hash TEXT PRIMARY KEY, size INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS entries_by_use ON entries(used_at);
"""


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
        return LocalStore(Path(location.removeprefix("file://")), create=create, max_bytes=max_bytes)
    if max_bytes is not None:
        raise StoreError(
            f"tool store {location}: tool_store_max_mb bounds local stores only; drop it and bound the bucket "
            "with its own lifecycle rules"
        )
    return RemoteStore(location, create=create)


class ResponseStore:
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
    def entry(self, snapshot: str, key: str) -> Entry | None:
        raise NotImplementedError

    def entries(self, snapshot: str) -> list[Entry]:
        raise NotImplementedError

    def snapshots(self) -> list[Snapshot]:
        raise NotImplementedError

    def ensure_snapshot(self, name: str) -> Snapshot:
        """Snapshot ``name``, created empty when absent."""
        raise NotImplementedError

    def freeze(self, name: str) -> Snapshot:
        raise NotImplementedError

    def _put_entry(self, snapshot: str, entry: Entry, size: int) -> None:
        raise NotImplementedError

    def _exists(self, path: str) -> bool:
        raise NotImplementedError

    def _read(self, path: str) -> bytes | None:
        raise NotImplementedError

    def _write_atomic(self, path: str, data: bytes) -> None:
        raise NotImplementedError


class LocalStore(ResponseStore):
    """A store in a local folder: SQLite index (WAL, one writer at a time, readers never blocked) and blob files
    written to a temporary name and renamed into place."""

    def __init__(self, root: Path, *, create: bool, max_bytes: int | None = None):
        self.root, self.location, self.max_bytes = root, str(root), max_bytes
        index = root / INDEX_FILE
        if not index.exists():
            if not create:
                raise StoreError(
                    f"tool store {root}: not found (no {INDEX_FILE}); record one with -T tool_cache=record "
                    f"-T tool_store={root}, or import one with `mara tools import FILE.tar --store {root}`"
                )
            root.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            index, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(SCHEMA)
            self._check_version()
        except sqlite3.DatabaseError as err:
            self._db.close()
            raise StoreError(
                f"tool store {root}: {INDEX_FILE} is not a tool-store index ({err}); move the folder away or "
                "point -T tool_store at another one"
            ) from None

    def _check_version(self) -> None:
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        (version,) = self._db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if version != str(SCHEMA_VERSION):
            raise sqlite3.DatabaseError(f"schema version {version}, this code reads {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taking SQLite's write lock at once (waits up to ``BUSY_TIMEOUT_S``)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def entry(self, snapshot: str, key: str) -> Entry | None:
        row = self._db.execute(
            "SELECT key, tool, request, blob, status, recorded_at FROM entries WHERE snapshot = ? AND key = ?",
            (snapshot, key),
        ).fetchone()
        if row is None:
            return None
        if (
            self.max_bytes is not None
        ):  # least-recently-used needs the last use; unbounded stores skip the write
            with self._writing() as db:
                db.execute(
                    "UPDATE entries SET used_at = ? WHERE snapshot = ? AND key = ?",
                    (time.time(), snapshot, key),
                )
        return Entry(row[0], row[1], json.loads(row[2]), row[3], row[4], row[5])

    def entries(self, snapshot: str) -> list[Entry]:
        rows = self._db.execute(
            "SELECT key, tool, request, blob, status, recorded_at FROM entries WHERE snapshot = ? ORDER BY key",
            (snapshot,),
        )
        return [Entry(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows]

    def snapshots(self) -> list[Snapshot]:
        rows = self._db.execute(
            "SELECT s.name, count(e.key), s.frozen_at, s.digest FROM snapshots s "
            "LEFT JOIN entries e ON e.snapshot = s.name GROUP BY s.name ORDER BY s.name"
        )
        return [Snapshot(name, count, frozen is not None, digest) for name, count, frozen, digest in rows]

    def ensure_snapshot(self, name: str) -> Snapshot:
        with self._writing() as db:
            db.execute("INSERT OR IGNORE INTO snapshots(name, created_at) VALUES (?, ?)", (name, time.time()))
        return self.require_snapshot(name)

    def freeze(self, name: str) -> Snapshot:
        self.require_snapshot(name)
        with self._writing() as db:
            pairs = db.execute("SELECT key, blob FROM entries WHERE snapshot = ?", (name,)).fetchall()
            db.execute(
                "UPDATE snapshots SET frozen_at = coalesce(frozen_at, ?), digest = coalesce(digest, ?) "
                "WHERE name = ?",
                (time.time(), snapshot_digest(pairs), name),
            )
        return self.require_snapshot(name)

    def _put_entry(self, snapshot: str, entry: Entry, size: int) -> None:
        with self._writing() as db:
            frozen = db.execute("SELECT frozen_at FROM snapshots WHERE name = ?", (snapshot,)).fetchone()
            if frozen and frozen[0] is not None:
                raise StoreError(
                    f"tool store {self.root}: snapshot {snapshot!r} is frozen; record into a new one"
                )
            db.execute(
                "INSERT OR IGNORE INTO snapshots(name, created_at) VALUES (?, ?)", (snapshot, time.time())
            )
            db.execute("INSERT OR IGNORE INTO blobs VALUES (?, ?)", (entry.blob, size))
            db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    snapshot,
                    entry.key,
                    entry.tool,
                    canonical_json(entry.request),
                    entry.blob,
                    entry.status,
                    entry.recorded_at,
                    entry.recorded_at,
                ),
            )
            evicted = self._evict(db) if self.max_bytes is not None else []
        for digest in evicted:
            with contextlib.suppress(FileNotFoundError):
                (self.root / self._blob_path(digest)).unlink()

    def _evict(self, db: sqlite3.Connection) -> list[str]:
        """Drop least recently used entries of unfrozen snapshots until the blobs they use fit ``max_bytes``;
        returns the blobs no entry uses any more (their rows deleted here; the caller removes the files)."""
        used = "SELECT coalesce(sum(size), 0) FROM blobs WHERE hash IN (SELECT blob FROM entries)"
        candidates = db.execute(
            "SELECT e.snapshot, e.key FROM entries e JOIN snapshots s ON s.name = e.snapshot "
            "WHERE s.frozen_at IS NULL ORDER BY e.used_at"
        ).fetchall()
        for snapshot, key in candidates:
            if db.execute(used).fetchone()[0] <= self.max_bytes:
                break
            db.execute("DELETE FROM entries WHERE snapshot = ? AND key = ?", (snapshot, key))
        orphans = [
            r[0] for r in db.execute("SELECT hash FROM blobs WHERE hash NOT IN (SELECT blob FROM entries)")
        ]
        db.executemany("DELETE FROM blobs WHERE hash = ?", [(digest,) for digest in orphans])
        return orphans

    def total_bytes(self) -> int:
        return self._db.execute("SELECT coalesce(sum(size), 0) FROM blobs").fetchone()[0]

    def _exists(self, path: str) -> bool:
        return (self.root / path).exists()

    def _read(self, path: str) -> bytes | None:
        try:
            return (self.root / path).read_bytes()
        except FileNotFoundError:
            return None

    def _write_atomic(self, path: str, data: bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)


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


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no spaces: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
