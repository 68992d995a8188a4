"""A snapshot as one tar file: ``export_snapshot`` writes it, ``import_snapshot`` reads it into another store.

The tar holds ``manifest.json`` (format, snapshot name, id, every entry's index row) and the entries' blobs under
``blobs/`` exactly as the store keeps them. Import checks every blob against its content hash and the entries
against the manifest's snapshot id before it writes anything, and the imported snapshot is frozen, so a published
run is re-scored on exactly the pages it was measured on.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.toolcache.store import Entry, ResponseStore, Snapshot, StoreError, content_hash, snapshot_digest

FORMAT = "mara-tool-snapshot"
VERSION = 1
MANIFEST = "manifest.json"


def export_snapshot(store: ResponseStore, name: str, path: Path) -> Snapshot:
    """Freeze snapshot ``name`` (it is published as it is now) and write it to the tar file ``path``."""
    snapshot = store.freeze(name)
    entries = store.entries(name)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "snapshot": name,
        "id": snapshot.digest,
        "entries": [asdict(entry) for entry in entries],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(handle)
    try:
        with tarfile.open(temporary, "w") as tar:
            _add(tar, MANIFEST, json.dumps(manifest, indent=1).encode())
            for blob in sorted({entry.blob for entry in entries}):
                data = store.get_blob(blob)
                if data is None:
                    raise StoreError(
                        f"tool store {store.location}: blob {blob} of snapshot {name!r} is missing"
                    )
                _add(tar, f"blobs/{blob}.z", zlib.compress(data, 6))
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return snapshot


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


@dataclass(frozen=True)
class Archive:
    """An exported snapshot, read and checked: its name, id, entries and blobs."""

    snapshot: str
    id: str
    entries: list[Entry]
    blobs: dict[str, bytes]


def read_archive(path: Path) -> Archive:
    """The snapshot in the tar file ``path``, every blob checked against its hash and the entries against the
    snapshot id; ``StoreError`` naming the file otherwise."""
    try:
        with tarfile.open(path, "r") as tar:
            manifest, blobs = _read_tar(tar, path)
    except StoreError:
        raise
    except (tarfile.TarError, OSError, zlib.error, ValueError, KeyError) as err:
        raise StoreError(
            f"{path}: not a tool-snapshot tar file ({type(err).__name__}); export one with `mara tools export`"
        ) from None
    entries = [Entry(**row) for row in manifest["entries"]]
    if snapshot_digest([(e.key, e.blob) for e in entries]) != manifest["id"]:
        raise StoreError(
            f"{path}: the entries do not match the snapshot id {manifest['id']}; the file is damaged"
        )
    missing = sorted({e.blob for e in entries} - set(blobs))
    if missing:
        raise StoreError(f"{path}: {len(missing)} response(s) missing from the archive, e.g. {missing[0]}")
    return Archive(manifest["snapshot"], manifest["id"], entries, blobs)


def import_snapshot(store: ResponseStore, archive: Archive, rename: str | None = None) -> Snapshot:
    """``archive`` added to ``store`` as a frozen snapshot (its own name, or ``rename``); importing the same
    snapshot again changes nothing."""
    name = rename or archive.snapshot
    existing = {snapshot.name: snapshot for snapshot in store.snapshots()}.get(name)
    if existing is not None:
        if existing.digest == archive.id:
            return existing
        raise StoreError(
            f"tool store {store.location}: a different snapshot {name!r} exists already; import under another "
            "name with --as NAME"
        )
    for entry in archive.entries:
        store.record(name, entry.key, entry.tool, entry.request, archive.blobs[entry.blob], entry.status)
    store.ensure_snapshot(name)
    return store.freeze(name)


def _read_tar(tar: tarfile.TarFile, path: Path) -> tuple[dict, dict[str, bytes]]:
    """The manifest and every blob (checked against its hash) of an exported snapshot."""
    member = tar.extractfile(MANIFEST)
    if member is None:
        raise StoreError(f"{path}: no {MANIFEST}; export the snapshot with `mara tools export`")
    manifest = json.loads(member.read())
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise StoreError(f"{path}: {MANIFEST} is not a {FORMAT} version {VERSION} manifest")
    blobs: dict[str, bytes] = {}
    for info in tar.getmembers():
        if not (info.isfile() and info.name.startswith("blobs/") and info.name.endswith(".z")):
            continue
        expected = info.name.removeprefix("blobs/").removesuffix(".z")
        data = zlib.decompress(tar.extractfile(info).read())
        if content_hash(data) != expected:
            raise StoreError(f"{path}: {info.name} does not match its content hash; the file is damaged")
        blobs[expected] = data
    return manifest, blobs
