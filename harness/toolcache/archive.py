"""A snapshot as one tar file: ``export_snapshot`` writes it, ``read_archive`` checks one, ``import_snapshot`` adds
a checked one to a store.

The tar holds, in this order, ``manifest.json`` (format, version, snapshot name, id, number of entries),
``entries.jsonl`` (one index row per line) and each entry's response under ``blobs/<sha256>.z`` (zlib). A snapshot
may come from someone else, so nothing in the file is trusted:

- the tar is read member by member (plain tar only, no member list kept), so its size in entries does not set the
  memory an import takes;
- the manifest and every entry row are validated with the typed-config machinery (one line naming the file, the
  line and the key); names must be in the safe alphabet, keys and blob names sha256 hex digests;
- every entry's key is recomputed from its recorded request, which must be normalised as a recorded request is;
- every blob is decompressed as a stream, under the cap its entries' recording settings give (``browse_max_chars``,
  ``python_max_output``) and the store-wide ``MAX_RESPONSE_BYTES``, its hash computed as it inflates;
- the entries must give the manifest's snapshot id, every blob must be used and every used blob present.

A problem is one ``StoreError`` line, and nothing is written to the store until the whole file has passed; the
import then reads the file again (checking every part again) and freezes the snapshot, which must get the same id.
"""

from __future__ import annotations

import json
import os
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Annotated, Any, Literal

from pydantic import AfterValidator, Field

from mara_bench.core.typed_config import config_dataclass, validate
from mara_bench.harness.toolcache.blobs import PIECE, BlobProblem, deflate, deflated_limit, inflate
from mara_bench.harness.toolcache.keys import HASH, check_hash, check_name, recorded_request_problem
from mara_bench.harness.toolcache.store import (
    MAX_RESPONSE_BYTES,
    Entry,
    ResponseStore,
    Snapshot,
    StoreError,
    safe_name,
    snapshot_digest,
)
from mara_bench.harness.toolcache.variants import response_limit

FORMAT = "mara-tool-snapshot"
VERSION = 2
MANIFEST = "manifest.json"
ENTRIES = "entries.jsonl"
MAX_MANIFEST_BYTES = 64 * 1024
MAX_ENTRY_BYTES = 2**20
"""Longest entry row (one JSON line) read."""
WRITE_BATCH = 5000
"""Entries written to the store per transaction on import."""
HexDigest = Annotated[str, AfterValidator(check_hash)]
SafeName = Annotated[str, AfterValidator(check_name)]


@config_dataclass(frozen=True, error=StoreError)
class ArchiveManifest:
    """``manifest.json`` of an exported snapshot."""

    format: Literal["mara-tool-snapshot"]
    """Always ``mara-tool-snapshot``."""
    version: Literal[2]
    """The layout's version (2: manifest, entries.jsonl, blobs)."""
    snapshot: SafeName
    """The snapshot's name (letters, digits, ``.``, ``_``, ``-``)."""
    id: Annotated[
        str, AfterValidator(lambda value: "sha256:" + check_hash(value.removeprefix("sha256:"), "id"))
    ]
    """The snapshot id: ``snapshot_digest`` of its entries' keys and blobs."""
    entries: Annotated[int, Field(ge=0)]
    """How many rows ``entries.jsonl`` holds."""


@config_dataclass(frozen=True, error=StoreError)
class ArchiveEntry:
    """One row of ``entries.jsonl``: an index entry as ``Entry`` holds it."""

    key: HexDigest
    """sha256 of the canonical request JSON (recomputed on import)."""
    tool: SafeName
    """The tool's name."""
    request: dict[str, Any]
    """The recorded request: tool, normalised arguments, shaping settings."""
    blob: HexDigest
    """sha256 of the response JSON."""
    status: Literal["ok", "error"]
    """``ok``, or ``error`` for a recorded tool error."""
    recorded_at: Annotated[float, Field(allow_inf_nan=False)]
    """When it was recorded (seconds since the epoch)."""


@dataclass(frozen=True)
class Span:
    """Where a member's bytes lie in the tar file."""

    offset: int
    size: int


@dataclass(frozen=True)
class Archive:
    """A snapshot tar file that passed every check: its name, id, and where its entries and blobs lie."""

    path: Path
    snapshot: str
    id: str
    entries: Span
    blobs: dict[str, Span]
    limits: dict[str, int]
    """Each blob's cap in bytes (the smallest its entries allow)."""


def export_snapshot(store: ResponseStore, name: str, path: Path) -> Snapshot:
    """Freeze snapshot ``name`` (it is published as it is now) and write it to the tar file ``path``."""
    snapshot = store.verify(store.freeze(name).name)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(handle)
    try:
        with tempfile.TemporaryFile() as rows, tarfile.open(temporary, "w") as tar:
            blobs: set[str] = set()
            for entry in store.iter_entries(name):
                rows.write(json.dumps(asdict(entry), ensure_ascii=False).encode() + b"\n")
                blobs.add(entry.blob)
            manifest = {"format": FORMAT, "version": VERSION, "snapshot": name, "id": snapshot.digest}
            _add(tar, MANIFEST, json.dumps({**manifest, "entries": snapshot.entries}, indent=1).encode())
            info = tarfile.TarInfo(ENTRIES)
            info.size, info.mode = rows.tell(), 0o644
            rows.seek(0)
            tar.addfile(info, rows)
            for blob in sorted(blobs):
                data = store.get_blob(blob)
                if data is None:
                    raise StoreError(
                        f"tool store {store.location}: blob {blob} of snapshot {name!r} is missing or damaged"
                    )
                _add(tar, f"blobs/{blob}.z", deflate(data))
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return snapshot


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, _Bytes(data))


class _Bytes:
    """``data`` as the file object ``TarFile.addfile`` reads."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size < 0 else self.at + size
        piece, self.at = self.data[self.at : end], min(end, len(self.data))
        return piece


def read_archive(path: Path, max_response_bytes: int = MAX_RESPONSE_BYTES) -> Archive:
    """The snapshot tar file ``path``, checked in full (see the module docstring); ``StoreError`` naming the file
    and the problem otherwise. ``max_response_bytes``: the store-wide cap on one response."""
    try:
        with open(path, "rb") as file, tarfile.open(fileobj=file, mode="r:") as tar:
            return _check(path, file, _members(tar), max_response_bytes)
    except StoreError:
        raise
    except (tarfile.TarError, OSError, EOFError) as err:
        raise StoreError(
            f"{path}: not a tool-snapshot tar file ({type(err).__name__}); export one with `mara tools export`"
        ) from None


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The tar's members one by one, forgetting each (``TarFile`` would keep a list of every member)."""
    while (info := tar.next()) is not None:
        tar.members.clear()
        yield info


def _chunks(file: IO[bytes], span: Span) -> Iterator[bytes]:
    file.seek(span.offset)
    left = span.size
    while left > 0:
        chunk = file.read(min(PIECE, left))
        if not chunk:
            raise EOFError("the file ends inside a member")
        left -= len(chunk)
        yield chunk


def _lines(file: IO[bytes], span: Span, path: Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of a JSON-lines member, each line at most ``MAX_ENTRY_BYTES``."""
    pending, number = b"", 0
    for chunk in _chunks(file, span):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            number += 1
            _short(line, number, path)
            yield number, line
        _short(pending, number + 1, path)
    if pending:
        yield number + 1, pending


def _short(line: bytes, number: int, path: Path) -> None:
    if len(line) > MAX_ENTRY_BYTES:
        raise StoreError(f"{path}: {ENTRIES} line {number} is over {MAX_ENTRY_BYTES:,} bytes")


def _json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as err:
        problem = "nested too deeply" if isinstance(err, RecursionError) else "not JSON"
        raise StoreError(f"{where}: {problem}; export the snapshot again with `mara tools export`") from None


def _member(info: tarfile.TarInfo | None, name: str, path: Path, limit: int) -> Span:
    if info is None or info.name != name or not info.isreg():
        found = "nothing" if info is None else repr(info.name)
        raise StoreError(
            f"{path}: expected {name} next, found {found}; export the snapshot with `mara tools export` (this "
            f"code reads {FORMAT} version {VERSION})"
        )
    if info.size > limit:
        raise StoreError(f"{path}: {name} is {info.size:,} bytes, over the limit of {limit:,}")
    return Span(info.offset_data, info.size)


def _entry(line: bytes, number: int, path: Path) -> Entry:
    """One checked entry row: typed, and its key the hash of its normalised request."""
    where = f"{path}: {ENTRIES} line {number}"
    row = validate(ArchiveEntry, _json(line, where), where, StoreError)
    problem = recorded_request_problem(row.key, row.tool, row.request)
    if problem:
        raise StoreError(f"{where}: entry {row.key[:16]}...: {problem}; the file is damaged or forged")
    return Entry(row.key, row.tool, row.request, row.blob, row.status, row.recorded_at)


def _check(path: Path, file: IO[bytes], members: Iterator[tarfile.TarInfo], cap: int) -> Archive:
    span = _member(next(members, None), MANIFEST, path, MAX_MANIFEST_BYTES)
    manifest = validate(
        ArchiveManifest,
        _json(b"".join(_chunks(file, span)), f"{path}: {MANIFEST}"),
        f"{path}: {MANIFEST}",
        StoreError,
    )
    entries = _member(next(members, None), ENTRIES, path, (MAX_ENTRY_BYTES + 1) * max(manifest.entries, 1))
    limits: dict[str, int] = {}
    pairs: list[tuple[str, str]] = []
    keys: set[str] = set()
    for number, line in _lines(file, entries, path):
        entry = _entry(line, number, path)
        if entry.key in keys:
            raise StoreError(f"{path}: {ENTRIES} line {number}: key {entry.key[:16]}... is given twice")
        keys.add(entry.key)
        pairs.append((entry.key, entry.blob))
        limits[entry.blob] = min(limits.get(entry.blob, cap), response_limit(entry.request), cap)
    if len(pairs) != manifest.entries:
        raise StoreError(
            f"{path}: {ENTRIES} holds {len(pairs)} entries, the manifest says {manifest.entries}"
        )
    if snapshot_digest(pairs) != manifest.id:
        raise StoreError(
            f"{path}: the entries do not give the snapshot id {manifest.id}; the file is damaged"
        )
    del keys, pairs
    blobs: dict[str, Span] = {}
    for info in members:
        digest = info.name.removeprefix("blobs/").removesuffix(".z")
        if f"blobs/{digest}.z" != info.name or not info.isreg() or not HASH.fullmatch(digest):
            raise StoreError(
                f"{path}: unexpected member {info.name!r}; a snapshot holds only blobs/<sha256>.z"
            )
        if digest not in limits or digest in blobs:
            problem = "no entry uses it" if digest not in limits else "it is there twice"
            raise StoreError(f"{path}: {info.name}: {problem}; the file is damaged or forged")
        blob = Span(info.offset_data, info.size)
        _inflated(file, blob, limits[digest], digest, path, info.name)
        blobs[digest] = blob
    missing = sorted(set(limits) - set(blobs))
    if missing:
        raise StoreError(
            f"{path}: {len(missing)} response(s) missing from the archive, e.g. blobs/{missing[0]}.z"
        )
    return Archive(path, manifest.snapshot, manifest.id, entries, blobs, limits)


def _inflated(file: IO[bytes], span: Span, limit: int, digest: str, path: Path, name: str) -> bytes:
    """The checked content of a blob (compressed size, inflated size and hash)."""
    try:
        if span.size > deflated_limit(limit):
            raise BlobProblem(f"its {span.size:,} compressed bytes are over its cap of {limit:,} bytes")
        return inflate(_chunks(file, span), limit, digest)
    except BlobProblem as err:
        raise StoreError(f"{path}: {name}: {err}; the file is damaged or hostile") from None


def import_snapshot(store: ResponseStore, archive: Archive, rename: str | None = None) -> Snapshot:
    """``archive`` added to ``store`` as a frozen snapshot (its own name, or ``rename``); importing the same
    snapshot again changes nothing. Every part is checked again as it is read (the file may have changed)."""
    name = safe_name(store.location, rename or archive.snapshot)
    existing = {snapshot.name: snapshot for snapshot in store.snapshots()}.get(name)
    if existing is not None:
        if existing.digest == archive.id:
            return existing
        raise StoreError(
            f"tool store {store.location}: a different snapshot {name!r} exists already; import under another "
            "name with --as NAME"
        )
    path = archive.path
    try:
        with open(path, "rb") as file:
            sizes = {}
            for digest, span in archive.blobs.items():
                data = _inflated(file, span, archive.limits[digest], digest, path, f"blobs/{digest}.z")
                sizes[digest] = len(data)
                store.put_blob(data)
            batch: list[tuple[Entry, int]] = []
            for number, line in _lines(file, archive.entries, path):
                entry = _entry(line, number, path)
                if entry.blob not in sizes:
                    raise StoreError(f"{path}: changed while it was imported; import it again")
                batch.append((entry, sizes[entry.blob]))
                if len(batch) == WRITE_BATCH:
                    store.put_entries(name, batch)
                    batch = []
            store.put_entries(name, batch)
    except (OSError, EOFError) as err:
        raise StoreError(f"{path}: cannot be read again ({type(err).__name__}); import it again") from None
    snapshot = store.freeze(name)
    if snapshot.digest != archive.id:
        raise StoreError(
            f"{path}: changed while it was imported (snapshot {name!r} got id {snapshot.digest}, not {archive.id}); "
            "import it again under another name"
        )
    return snapshot
