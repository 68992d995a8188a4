"""A tool-response store in a local folder: a SQLite index (WAL) beside the blob files.

Several processes may record into one folder at once: every index write is one transaction that takes SQLite's
write lock at once (``BEGIN IMMEDIATE``, waiting up to ``BUSY_TIMEOUT_S``), readers are never blocked, and a blob is
written to a temporary name and renamed into place. With ``max_bytes`` a write also evicts (least recently used
entries of unfrozen snapshots first) until the blobs in use fit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mara_bench.harness.toolcache.keys import canonical_json
from mara_bench.harness.toolcache.store import (
    INDEX_FILE,
    Entry,
    ResponseStore,
    Snapshot,
    SnapshotFrozen,
    StoreError,
    safe_name,
    snapshot_digest,
)

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0
SETUP_LOCK_FILE = "index.setup-lock"
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


@contextlib.contextmanager
def _setup_lock(root: Path) -> Iterator[None]:
    """Serialise opening the index across processes: switching a new index to WAL and creating its tables can
    fail at once with "database is locked" (SQLite skips its busy wait there) when two writers open together.
    A folder this process cannot write to has no writer to wait for."""
    try:
        lock = open(root / SETUP_LOCK_FILE, "a")  # noqa: SIM115 (closed below, after the unlock)
    except OSError:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
            with _setup_lock(root):
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.executescript(SCHEMA)
                self._check_version()
        except sqlite3.OperationalError as err:
            self._db.close()
            raise StoreError(
                f"tool store {root}: cannot open {INDEX_FILE} ({err}); check the folder's permissions and free "
                "space, or point -T tool_store at another folder"
            ) from None
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

    def iter_entries(self, snapshot: str) -> Iterator[Entry]:
        rows = self._db.execute(
            "SELECT key, tool, request, blob, status, recorded_at FROM entries WHERE snapshot = ? ORDER BY key",
            (snapshot,),
        )
        for r in rows:
            yield Entry(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5])

    def snapshots(self) -> list[Snapshot]:
        rows = self._db.execute(
            "SELECT s.name, count(e.key), s.frozen_at, s.digest FROM snapshots s "
            "LEFT JOIN entries e ON e.snapshot = s.name GROUP BY s.name ORDER BY s.name"
        )
        return [Snapshot(name, count, frozen is not None, digest) for name, count, frozen, digest in rows]

    def ensure_snapshot(self, name: str) -> Snapshot:
        safe_name(self.location, name)
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

    def put_entries(self, snapshot: str, entries: list[tuple[Entry, int]]) -> None:
        safe_name(self.location, snapshot)
        with self._writing() as db:
            frozen = db.execute("SELECT frozen_at FROM snapshots WHERE name = ?", (snapshot,)).fetchone()
            if frozen and frozen[0] is not None:
                raise SnapshotFrozen(self.location, snapshot)
            db.execute(
                "INSERT OR IGNORE INTO snapshots(name, created_at) VALUES (?, ?)", (snapshot, time.time())
            )
            db.executemany(
                "INSERT OR IGNORE INTO blobs VALUES (?, ?)", [(e.blob, size) for e, size in entries]
            )
            db.executemany(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        snapshot,
                        e.key,
                        e.tool,
                        canonical_json(e.request),
                        e.blob,
                        e.status,
                        e.recorded_at,
                        e.recorded_at,
                    )
                    for e, _ in entries
                ],
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
