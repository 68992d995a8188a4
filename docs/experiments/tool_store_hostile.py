"""Hostile snapshot tar files against ``mara tools import``: each case's exit code, first output line, the peak of
the Python allocations the import makes (``tracemalloc``, started once the code is loaded) and its wall time (under
tracemalloc, which slows allocation-heavy work), as a Markdown table (docs/experiments/tool-store-hostile.md). Run
from the checkout::

    PYTHONPATH=. python docs/experiments/tool_store_hostile.py
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path

from mara_bench.harness.toolcache.keys import canonical_json, request_key, request_of
from mara_bench.harness.toolcache.store import snapshot_digest

MIB = 2**20
MEASURED = """
import sys, time, tracemalloc
from mara_bench.harness.cli import main
from mara_bench.harness.toolcache import archive, local_store  # what the import loads, loaded before measuring
tracemalloc.start()
start = time.time()
code = main(sys.argv[1:])
peak = tracemalloc.get_traced_memory()[1] / 2**20
print(f"MEASURED {code} {peak:.1f} {time.time() - start:.1f}", file=sys.stderr)
"""


def response(text: str) -> bytes:
    return canonical_json(
        {"text": text, "tool_text": False, "documents": [], "sources": [], "error": None}
    ).encode()


def row(tool: str, arguments: dict, variant: dict, blob: str, **changes) -> dict:
    request = request_of(tool, arguments, variant)
    return {"key": request_key(request), "tool": tool, "request": request, "blob": blob, "status": "ok",
            "recorded_at": 1.0, **changes}  # fmt: skip


def bomb(mib: int) -> tuple[str, bytes]:
    compressor, digest, parts, zeros = zlib.compressobj(9), hashlib.sha256(), [], bytes(MIB)
    for _ in range(mib):
        parts.append(compressor.compress(zeros))
        digest.update(zeros)
    return digest.hexdigest(), b"".join(parts) + compressor.flush()


def write(path: Path, rows: list[dict], blobs: dict[str, bytes], **manifest_changes) -> Path:
    manifest = {"format": "mara-tool-snapshot", "version": 2, "snapshot": "s", "entries": len(rows),
                "id": snapshot_digest([(r["key"], r["blob"]) for r in rows]), **manifest_changes}  # fmt: skip
    members = {"manifest.json": json.dumps(manifest).encode(),
               "entries.jsonl": b"".join(json.dumps(r).encode() + b"\n" for r in rows)}  # fmt: skip
    members |= {f"blobs/{digest}.z": data for digest, data in blobs.items()}
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def cases(folder: Path) -> dict[str, Path]:
    small = response("Paris")
    paris = hashlib.sha256(small).hexdigest()
    made = {}
    digest, data = bomb(1024)
    made["3 x 1 GiB zlib bombs, true hashes, as browse responses"] = write(
        folder / "a.tar",
        [
            row("browse", {"url": f"http://example.org/{i}"}, {"browse_max_chars": 20000}, digest)
            for i in range(3)
        ],
        {digest: data},
    )
    made["1 GiB zlib bomb, true hash, as a search response"] = write(
        folder / "b.tar", [row("search", {"query": "q"}, {}, digest)], {digest: data}
    )
    wrong = hashlib.sha256(b"else").hexdigest()
    made["1 GiB zlib bomb under a wrong hash"] = write(
        folder / "c.tar", [row("search", {"query": "q"}, {}, wrong)], {wrong: data}
    )
    honest_key = request_key(request_of("search", {"query": "capital of france"}, {}))
    lyon = response("Lyon")
    made["key of one search, request of another"] = write(
        folder / "d.tar",
        [
            row(
                "search",
                {"query": "largest city on the rhone"},
                {},
                hashlib.sha256(lyon).hexdigest(),
                key=honest_key,
            )
        ],
        {hashlib.sha256(lyon).hexdigest(): zlib.compress(lyon)},
    )
    made["key ../../../X"] = write(
        folder / "e.tar",
        [row("search", {"query": "q"}, {}, paris, key="../../../X")],
        {paris: zlib.compress(small)},
    )
    made["manifest snapshot name with escape codes"] = write(
        folder / "f.tar", [row("search", {"query": "q"}, {}, paris)], {paris: zlib.compress(small)},
        snapshot="a\x1b[31m\nb",
    )  # fmt: skip
    many = [row("search", {"query": f"q{i}"}, {}, paris) for i in range(100_000)]
    made["100,000 entries, valid"] = write(folder / "g.tar", many, {paris: zlib.compress(small)})
    made["100,000 entries, the last one forged"] = write(
        folder / "h.tar", [*many[:-1], {**many[-1], "key": many[0]["key"]}], {paris: zlib.compress(small)}
    )
    return made


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        print(
            "| case | exit | peak of Python allocations (MiB, tracemalloc) | seconds | first line |\n|---|---|---|---|---|"
        )
        for name, tar in cases(folder).items():
            store = folder / f"store-{tar.stem}"
            done = subprocess.run(
                [sys.executable, "-c", MEASURED, "tools", "import", str(tar), "--store", str(store)],
                capture_output=True,
                text=True,
            )
            measured = [line for line in done.stderr.splitlines() if line.startswith("MEASURED")][-1].split()
            said = [
                line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("MEASURED")
            ]
            first = said[0].replace(str(folder), "$TMP").replace("|", "\\|")[:220] if said else ""
            print(f"| {name} | {measured[1]} | {measured[2]} | {measured[3]} | `{first}` |")


if __name__ == "__main__":
    main()
