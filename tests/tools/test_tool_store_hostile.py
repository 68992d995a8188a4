"""A tool store trusted with someone else's snapshot: hostile tar files (bombs, wrong hashes, keys that are not their
request's, traversal and escape-code names, malformed manifests, 100,000 entries) are each refused in one line,
within 100 MiB of memory growth (tracemalloc), with nothing written; a snapshot changed in the store after it was
frozen is refused when opened; and file://, local:// and memory:// stores behave alike."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import sqlite3
import subprocess
import sys
import tarfile
import tracemalloc
import uuid
import zlib
from pathlib import Path

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.cli import main as mara
from mara_bench.harness.toolcache import open_cache, open_store
from mara_bench.harness.toolcache.archive import export_snapshot, import_snapshot, read_archive
from mara_bench.harness.toolcache.keys import canonical_json, request_key, request_of
from mara_bench.harness.toolcache.store import StoreError, snapshot_digest

MIB = 2**20
MEMORY_BOUND = 100 * MIB
BROWSE_VARIANT = {"browse_max_chars": 20000}


def run(coroutine):
    return asyncio.run(coroutine)


def response(text: str) -> bytes:
    return canonical_json(
        {"text": text, "tool_text": False, "documents": [], "sources": [], "error": None}
    ).encode()


def entry_row(tool: str, arguments: dict, variant: dict, blob: str, /, **changes) -> dict:
    request = request_of(tool, arguments, variant)
    row = {
        "key": request_key(request),
        "tool": tool,
        "request": request,
        "blob": blob,
        "status": "ok",
        "recorded_at": 1.0,
    }
    return {**row, **changes}


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def snapshot_tar(
    path: Path, rows: list[dict], blobs: dict[str, bytes], *, name: str = "shared", **manifest_changes
) -> Path:
    """A version-2 snapshot tar of ``rows`` with ``blobs`` (name -> compressed bytes), its id computed honestly."""
    manifest = {
        "format": "mara-tool-snapshot",
        "version": 2,
        "snapshot": name,
        "id": snapshot_digest([(row["key"], row["blob"]) for row in rows]),
        "entries": len(rows),
        **manifest_changes,
    }
    lines = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
    members = [("manifest.json", json.dumps(manifest).encode()), ("entries.jsonl", lines)]
    return write_tar(path, members + [(f"blobs/{digest}.z", data) for digest, data in blobs.items()])


def honest(text: str) -> tuple[str, bytes]:
    data = response(text)
    return hashlib.sha256(data).hexdigest(), zlib.compress(data)


def bomb(mib: int) -> tuple[str, bytes]:
    """A zlib stream of ``mib`` MiB of zeros (a few hundred KiB) and the true hash of what it inflates to."""
    compressor, digest, parts, zeros = zlib.compressobj(9), hashlib.sha256(), [], bytes(MIB)
    for _ in range(mib):
        parts.append(compressor.compress(zeros))
        digest.update(zeros)
    parts.append(compressor.flush())
    return digest.hexdigest(), b"".join(parts)


def refused_import(tar: Path, store: Path, capsys, *extra: str) -> str:
    """``mara tools import`` of ``tar``: its one error line, after checking exit code 2, the memory growth and that
    no store was created."""
    tracemalloc.start()
    try:
        code = mara(["tools", "import", str(tar), "--store", str(store), *extra])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    error = capsys.readouterr().err
    assert code == 2, error
    assert error.startswith("mara tools: ") and error.count("\n") == 1, error
    assert peak < MEMORY_BOUND, f"{peak / MIB:.0f} MiB"
    assert not store.exists()
    return error


def test_a_browse_bomb_named_by_its_true_hash_stops_at_the_recording_limit(tmp_path, capsys):
    digest, data = bomb(256)
    row = entry_row("browse", {"url": "http://example.org/"}, BROWSE_VARIANT, digest)
    tar = snapshot_tar(tmp_path / "bomb.tar", [row], {digest: data})
    error = refused_import(tar, tmp_path / "store", capsys)
    assert "inflates past its cap of 436,608 bytes" in error  # 12 bytes x (20,000 + 16,384 characters)


def test_a_search_bomb_stops_at_the_store_wide_cap(tmp_path, capsys):
    digest, data = bomb(64)
    row = entry_row("search", {"query": "q"}, {"k": 10}, digest)
    tar = snapshot_tar(tmp_path / "bomb.tar", [row], {digest: data})
    assert "inflates past its cap of 33,554,432 bytes" in refused_import(tar, tmp_path / "store", capsys)
    with pytest.raises(StoreError, match="inflates past its cap of 1,048,576 bytes"):
        read_archive(tar, max_response_bytes=MIB)


def test_a_bomb_with_a_wrong_hash_costs_no_more_than_its_cap(tmp_path, capsys):
    _, data = bomb(128)
    wrong = hashlib.sha256(b"something else").hexdigest()
    row = entry_row("search", {"query": "q"}, {}, wrong)
    tar = snapshot_tar(tmp_path / "bomb.tar", [row], {wrong: data})
    assert "inflates past its cap" in refused_import(tar, tmp_path / "store", capsys)


def test_a_small_blob_with_a_wrong_hash_is_refused(tmp_path, capsys):
    digest, _ = honest("Paris")
    row = entry_row("search", {"query": "capital of france"}, {}, digest)
    tar = snapshot_tar(tmp_path / "lie.tar", [row], {digest: zlib.compress(response("Lyon"))})
    assert "does not match its content hash" in refused_import(tar, tmp_path / "store", capsys)


def test_a_compressed_blob_larger_than_any_content_it_may_hold_is_refused_unread(tmp_path, capsys):
    digest, _ = honest("x")
    row = entry_row("browse", {"url": "http://a/"}, {"browse_max_chars": 1}, digest)
    tar = snapshot_tar(tmp_path / "fat.tar", [row], {digest: b"\0" * 300_000})
    assert "compressed bytes are over its cap" in refused_import(tar, tmp_path / "store", capsys)


def test_an_entry_whose_key_is_not_its_request_is_refused(tmp_path, capsys):
    digest, data = honest("Lyon")
    honest_key = request_key(request_of("search", {"query": "capital of france"}, {}))
    row = entry_row("search", {"query": "largest city of the rhone"}, {}, digest, key=honest_key)
    tar = snapshot_tar(tmp_path / "forged.tar", [row], {digest: data})
    assert "its key is not the hash of its request" in refused_import(tar, tmp_path / "store", capsys)


def test_a_request_that_is_not_normalised_is_refused_even_with_its_true_key(tmp_path, capsys):
    digest, data = honest("Lyon")
    request = {"tool": "search", "arguments": {"query": "capital   of  France"}, "variant": {}}
    row = entry_row("search", {}, {}, digest, request=request, key=request_key(request))
    tar = snapshot_tar(tmp_path / "forged.tar", [row], {digest: data})
    assert "not normalised" in refused_import(tar, tmp_path / "store", capsys)


def test_an_entry_for_another_tool_than_its_request_is_refused(tmp_path, capsys):
    digest, data = honest("x")
    row = entry_row("search", {"query": "q"}, {}, digest, tool="python")
    tar = snapshot_tar(tmp_path / "forged.tar", [row], {digest: data})
    assert "not python" in refused_import(tar, tmp_path / "store", capsys)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"snapshot": "../../../X"}, "manifest.json: snapshot:"),
        ({"snapshot": "a\x1b[31m\nb"}, "manifest.json: snapshot:"),
        ({"version": 1}, "manifest.json: version:"),
        ({"format": "tar"}, "manifest.json: format:"),
        ({"id": "sha256:00"}, "manifest.json: id:"),
        ({"entries": -1}, "manifest.json: entries:"),
        ({"entries": 2}, "entries.jsonl holds 1 entries, the manifest says 2"),
        ({"extra": 1}, "manifest.json: extra:"),
        ({"id": "sha256:" + "0" * 64}, "the entries do not give the snapshot id"),
    ],
)
def test_a_malformed_manifest_is_one_line_naming_the_key(tmp_path, capsys, change, problem):
    digest, data = honest("x")
    rows = [entry_row("search", {"query": "q"}, {}, digest)]
    tar = snapshot_tar(tmp_path / "bad.tar", rows, {digest: data}, **change)
    error = refused_import(tar, tmp_path / "store", capsys)
    assert problem in error and "\x1b" not in error


@pytest.mark.parametrize(
    ("row_change", "problem"),
    [
        ({"key": "../../../X"}, "entries.jsonl line 1: key:"),
        ({"blob": "../../etc/passwd"}, "entries.jsonl line 1: blob:"),
        ({"tool": "a/b"}, "entries.jsonl line 1: tool:"),
        ({"status": "maybe"}, "entries.jsonl line 1: status:"),
        ({"recorded_at": "yesterday"}, "entries.jsonl line 1: recorded_at:"),
        ({"surprise": 1}, "entries.jsonl line 1: surprise:"),
    ],
)
def test_a_malformed_entry_row_is_one_line_naming_line_and_key(tmp_path, capsys, row_change, problem):
    digest, data = honest("x")
    rows = [entry_row("search", {"query": "q"}, {}, digest, **row_change)]
    tar = snapshot_tar(tmp_path / "bad.tar", rows, {digest: data})
    assert problem in refused_import(tar, tmp_path / "store", capsys)


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ([("manifest.json", b"{not json")], "manifest.json: not JSON"),
        ([("manifest.json", b"[" * 30_000 + b"]" * 30_000)], "manifest.json: nested too deeply"),
        ([("manifest.json", b" " * 70_000)], "over the limit of 65,536"),
        ([("blobs/x.z", b"")], "expected manifest.json next, found 'blobs/x.z'"),
        ([], "expected manifest.json next, found nothing"),
    ],
)
def test_a_tar_without_a_readable_manifest_is_one_line(tmp_path, capsys, members, problem):
    tar = write_tar(tmp_path / "bad.tar", members)
    assert problem in refused_import(tar, tmp_path / "store", capsys)


def test_deep_lines_long_lines_traversal_members_and_unused_blobs_are_refused(tmp_path, capsys):
    digest, data = honest("x")
    row = entry_row("search", {"query": "q"}, {}, digest)
    manifest = {
        "format": "mara-tool-snapshot",
        "version": 2,
        "snapshot": "s",
        "id": snapshot_digest([(row["key"], digest)]),
        "entries": 1,
    }
    head = [("manifest.json", json.dumps(manifest).encode())]
    two = [("manifest.json", json.dumps({**manifest, "entries": 2}).encode())]
    line = json.dumps(row).encode() + b"\n"
    cases = {
        "nested too deeply": [("entries.jsonl", b"[" * 50_000 + b"]" * 50_000 + b"\n")],
        "line 1 is over 1,048,576 bytes": [("entries.jsonl", b" " * (MIB + 10) + b"\n" + line)],
        "unexpected member '../../outside.z'": [("entries.jsonl", line), ("../../outside.z", data)],
        "no entry uses it": [
            ("entries.jsonl", line),
            (f"blobs/{digest}.z", data),
            (f"blobs/{'0' * 64}.z", data),
        ],
        "it is there twice": [
            ("entries.jsonl", line),
            (f"blobs/{digest}.z", data),
            (f"blobs/{digest}.z", data),
        ],
        "response(s) missing": [("entries.jsonl", line)],
    }
    for problem, members in cases.items():
        tar = write_tar(tmp_path / "bad.tar", (two if "bytes" in problem else head) + members)
        assert problem in refused_import(tar, tmp_path / "store", capsys)
    assert not (tmp_path.parent / "outside.z").exists()


def test_a_tar_file_that_is_not_a_plain_tar_or_is_a_folder_is_one_line(tmp_path, capsys):
    digest, data = honest("x")
    plain = snapshot_tar(
        tmp_path / "s.tar", [entry_row("search", {"query": "q"}, {}, digest)], {digest: data}
    )
    gzipped = tmp_path / "s.tar.gz"
    gzipped.write_bytes(__import__("gzip").compress(plain.read_bytes()))
    for tar in (gzipped, tmp_path, tmp_path / "absent.tar"):
        assert "not a tool-snapshot tar file" in refused_import(tar, tmp_path / "store", capsys)


MEASURED_IMPORT = """
import resource, sys
from mara_bench.harness.cli import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = main(["tools", "import", *sys.argv[1:]])
print("growth_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, "exit", code)
"""


def test_a_100k_entry_tar_with_one_forged_row_at_the_end_is_refused_within_the_memory_bound(tmp_path):
    digest, data = honest("shared answer")
    rows = [entry_row("search", {"query": f"q{index}"}, {}, digest) for index in range(100_000)]
    rows[-1] = {**rows[-1], "key": rows[0]["key"]}
    tar = snapshot_tar(tmp_path / "big.tar", rows, {digest: data})
    store = tmp_path / "store"
    done = subprocess.run(
        [sys.executable, "-c", MEASURED_IMPORT, str(tar), "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[2],
    )
    assert done.stderr.count("\n") == 1 and "entries.jsonl line 100000" in done.stderr, done.stderr
    growth_kib, code = int(done.stdout.split()[1]), int(done.stdout.split()[3])
    assert code == 2 and growth_kib * 1024 < MEMORY_BOUND, done.stdout
    assert not store.exists()


def test_import_as_an_unsafe_name_and_freeze_of_one_are_one_line(tmp_path, capsys):
    digest, data = honest("x")
    tar = snapshot_tar(tmp_path / "s.tar", [entry_row("search", {"query": "q"}, {}, digest)], {digest: data})
    for name in ("../x", "a\x1b[31m\nb", "/abs", ".hidden", ""):
        error = refused_import(tar, tmp_path / "store", capsys, "--as", name)
        assert "is not allowed: use letters, digits" in error and "\x1b" not in error
    open_store(str(tmp_path / "other"), create=True)
    assert mara(["tools", "freeze", "a\x1b[31m\nb", "--store", str(tmp_path / "other")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


STORE_KINDS = ["folder", "file", "local", "memory"]


def store_url(kind: str, tmp_path: Path, name: str) -> str:
    folder = tmp_path / name
    return {
        "folder": str(folder),
        "file": f"file://{folder}",
        "local": f"local://{folder}",
        "memory": f"memory://mara-hostile-{uuid.uuid4().hex}/{name}",
    }[kind]


def record_two(url: str) -> None:
    cache = open_cache("record", "night", url, None)

    async def answer(**arguments):
        return f"answer to {arguments['query']}"

    tool = cache.wrap("search", answer, {})
    run(tool(query="capital of france"))
    run(tool(query="largest city of the rhone"))


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_every_store_kind_records_exports_imports_and_replays(tmp_path, kind):
    source, target = store_url(kind, tmp_path, "a"), store_url(kind, tmp_path, "deep/er/b")
    record_two(source)
    exported = export_snapshot(open_store(source, create=False), "night", tmp_path / "night.tar")
    imported = import_snapshot(open_store(target, create=True), read_archive(tmp_path / "night.tar"))
    assert imported.digest == exported.digest and imported.entries == 2
    replay = open_cache("replay", "night", target, None)
    assert run(replay.wrap("search", None, {})(query="capital of france")) == "answer to capital of france"


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_frozen_snapshot_changed_in_the_store_is_refused_when_opened(tmp_path, kind):
    url = store_url(kind, tmp_path, "a")
    record_two(url)
    store = open_store(url, create=False)
    frozen = store.freeze("night")
    first, second = store.entries("night")
    if kind in ("folder", "file"):
        db = sqlite3.connect(tmp_path / "a" / "index.sqlite")
        db.execute("UPDATE entries SET blob = ? WHERE key = ?", (second.blob, first.key))
        db.commit()
    else:
        path = f"{store.root}/index/night/{first.key}.json"
        row = json.loads(store.fs.cat_file(path))
        store.fs.pipe_file(path, json.dumps({**row, "blob": second.blob}).encode())
    with pytest.raises(
        StoreError, match=f"was changed after it was frozen .*its id {frozen.digest}"
    ) as caught:
        open_cache("replay", "night", url, None)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", ["folder", "memory"])
def test_a_row_whose_key_is_not_its_request_is_refused_when_opened_even_unfrozen(tmp_path, kind):
    url = store_url(kind, tmp_path, "a")
    record_two(url)
    store = open_store(url, create=False)
    first, second = store.entries("night")
    if kind == "folder":
        db = sqlite3.connect(tmp_path / "a" / "index.sqlite")
        db.execute(
            "UPDATE entries SET request = ? WHERE key = ?", (canonical_json(second.request), first.key)
        )
        db.commit()
    else:
        path = f"{store.root}/index/night/{first.key}.json"
        row = json.loads(store.fs.cat_file(path))
        store.fs.pipe_file(path, json.dumps({**row, "request": second.request}).encode())
    with pytest.raises(StoreError, match="was changed: its key is not the hash of its request"):
        open_cache("replay-or-record", "night", url, None)


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_fsspec_paths_never_leave_the_store(tmp_path, kind):
    url = store_url(kind, tmp_path, "store")
    store = open_store(url, create=True)
    for snapshot, key in (("../../../X", "0" * 64), ("night", "../../../X"), ("night", "/abs")):
        with pytest.raises(StoreError, match="not allowed|not a sha256 hex digest"):
            store.record(snapshot, key, "search", {}, b"{}", "ok")
        with pytest.raises(StoreError):
            store.entry(snapshot, key)
    assert sorted(path.name for path in tmp_path.iterdir()) == (["store"] if kind == "local" else [])


def test_a_replayed_response_larger_than_its_recording_limit_is_a_miss(tmp_path):
    url = str(tmp_path / "a")
    cache = open_cache("record", "n", url, None)
    variant = {"browse_max_chars": 10}
    request = request_of("browse", {"url": "http://example.org/"}, variant)
    huge = response("x" * 400_000)
    cache.store.record("n", request_key(request), "browse", request, huge, "ok")
    replay = open_cache("replay", "n", url, None)
    with pytest.raises(ToolError, match="tool cache miss"):
        run(replay.wrap("browse", None, variant)(url="http://example.org/"))
