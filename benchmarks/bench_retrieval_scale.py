"""Retrieval at scale: build and query FAISS indexes of several types over synthetic clustered 768-d vectors
(E5-base's dimension), each build in its own process, reporting per passage: build time, peak memory growth,
index bytes, query time, and recall@10 against exact search.

The baseline is the former build (every vector added to an in-memory ``IndexFlatIP``, then written): the same
work as the streamed ``Flat`` build, run in ``ROUNDS`` interleaved pairs (``_pairs.py``) for the time and
memory ratios (min/median/max). Other types are built once per size. Vectors are random (clustered), not
encoded: encoding is the same cost for every type and is measured in ``bench_retrieval.py``.

Run: ``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_retrieval_scale.py --benchmark-only -s``:
20,000 passages; ``MARA_BENCH_FULL=1``: 100,000 and 1,000,000 passages (3 GiB of vectors on disk at 1M).
Each type's line is printed as it completes, so a run stopped by a timeout still reports the types it built.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _pairs import interleaved_pairs, ratio_spread
from _scale_build import QUERIES

from mara_bench.harness.retrieval.vector_file import VectorFile

FULL = os.environ.get("MARA_BENCH_FULL") == "1"
SIZES = (100_000, 1_000_000) if FULL else (20_000,)
DIMENSION, CLUSTERS, ROUNDS = 768, 1_000, 3
WORKER = Path(__file__).with_name("_scale_build.py")
ROOT = Path(__file__).resolve().parents[1]


def _index_types(rows: int) -> list[str]:
    lists = 2 ** round(math.log2(4 * math.sqrt(rows)))  # FAISS's guide: 4-16 x sqrt(N) lists
    return ["SQfp16", "SQ8", f"IVF{lists},Flat", f"IVF{lists},PQ64", "HNSW32"]


def _vectors(directory: Path, rows: int) -> VectorFile:
    """``rows`` unit vectors around ``CLUSTERS`` random centres, written a block at a time."""
    vectors = VectorFile(directory / f"vectors_{rows}.f32", DIMENSION)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((CLUSTERS, DIMENSION)).astype(np.float32)
    with vectors.path.open("wb") as handle:
        for start in range(0, rows, 50_000):
            count = min(50_000, rows - start)
            block = centres[rng.integers(0, CLUSTERS, count)] + rng.standard_normal((count, DIMENSION))
            vectors.append(handle, (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(np.float32))
    return vectors


def _build(vectors: VectorFile, index_type: str, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    lists = index_type.split(",")[0][3:] if index_type.startswith("IVF") else ""
    train_rows = str(min(len(vectors), 64 * int(lists))) if lists else ""  # "": the build's default
    search_params = "nprobe=16" if lists else ("efSearch=64" if index_type.startswith("HNSW") else "")
    result = subprocess.run(
        [
            sys.executable,
            str(WORKER),
            str(vectors.path),
            str(DIMENSION),
            index_type,
            str(out),
            train_rows,
            search_params,
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    (out / "index.faiss").unlink()
    return json.loads(result.stdout.splitlines()[-1]) | {
        "search_params": search_params,
        "train_rows": train_rows,
    }


def _per_passage(measured: dict, rows: int) -> dict:
    return {
        "build_us_per_passage": round(1e6 * measured["build_s"] / rows, 2),
        "peak_rss_growth_bytes_per_passage": round(measured["rss_growth"] / rows, 1),
        "index_bytes_per_passage": round(measured["file_bytes"] / rows, 1),
        "query_ms_per_query": round(1e3 * measured["query_s"] / QUERIES, 3),
        "recall_at_10": round(measured["recall"], 4),
        "search_params": measured["search_params"],
        "train_rows": measured["train_rows"],
    }


@pytest.mark.parametrize("rows", SIZES)
def test_index_types_at_scale(benchmark, tmp_path, rows):
    vectors = _vectors(tmp_path, rows)
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: _build(vectors, "Flat", tmp_path / "ours"),
            lambda: _build(vectors, "in-RAM Flat", tmp_path / "old"),
            ROUNDS,
        ),
        rounds=1,
        iterations=1,
    )
    report = {
        "passages": rows,
        "dimension": DIMENSION,
        "streamed_flat_vs_in_ram_flat": {
            "build_time_ratio": ratio_spread(
                pairs, lambda p: p.ours["build_s"] / p.baseline["build_s"]
            ).as_dict(),
            "peak_rss_growth_ratio": ratio_spread(
                pairs, lambda p: p.ours["rss_growth"] / max(p.baseline["rss_growth"], 1)
            ).as_dict(),
        },
        "types": {
            "in-RAM Flat (before)": _per_passage(pairs[-1].baseline, rows),
            "Flat": _per_passage(pairs[-1].ours, rows),
        },
    }
    print(f"\n{rows} passages, Flat pairs: {json.dumps(report)}", flush=True)
    for index_type in _index_types(rows):
        report["types"][index_type] = _per_passage(_build(vectors, index_type, tmp_path / index_type), rows)
        print(f"{rows} passages, {index_type}: {json.dumps(report['types'][index_type])}", flush=True)
    benchmark.extra_info.update(report)
    print(f"\nretrieval at {rows} passages: {json.dumps(report, indent=1)}")
