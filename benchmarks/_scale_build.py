"""One measured FAISS build in a fresh process (so its peak RSS is its own), for ``bench_retrieval_scale.py``.

python benchmarks/_scale_build.py VECTORS DIMENSION INDEX_TYPE OUT_DIR TRAIN_ROWS SEARCH_PARAMS  ("": defaults)
prints one JSON line: build seconds, peak RSS growth in bytes, index file bytes, query seconds for 1,000
queries (k = 10, single-threaded), recall@10 against exact search. INDEX_TYPE ``in-RAM Flat`` is the former
build: every vector added to an in-memory IndexFlatIP, then written.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import faiss
import numpy as np

from mara_bench.harness.retrieval.faiss_build import BLOCK_ROWS, build_faiss_index, read_faiss
from mara_bench.harness.retrieval.vector_file import VectorFile

IN_RAM_FLAT = "in-RAM Flat"
QUERIES, K = 1_000, 10


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (``VmRSS``, ``VmHWM``: the peak since the last reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> int:
    """Reset the peak RSS to the current RSS (``clear_refs`` 5) and return the current RSS."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def main(
    vectors_path: str, dimension: str, index_type: str, out: str, train_rows: str, search_params: str
) -> None:
    faiss.omp_set_num_threads(1)
    vectors, path = VectorFile(Path(vectors_path), int(dimension)), Path(out) / "index.faiss"
    before, start = _reset_peak(), time.perf_counter()
    if index_type == IN_RAM_FLAT:
        index = faiss.IndexFlatIP(vectors.dimension)
        for _, block in vectors.blocks(BLOCK_ROWS):
            index.add(block)
        faiss.write_index(index, str(path))
        del index
        recall = 1.0
    else:
        quality = build_faiss_index(
            vectors,
            index_type,
            path,
            train_rows=int(train_rows) if train_rows else None,
            search_params=search_params,
        )
        recall = quality.recall_at_k
    build_s, grown = time.perf_counter() - start, _status("VmHWM") - before
    index = read_faiss(path, search_params if index_type != IN_RAM_FLAT else "")
    queries = vectors.take(np.random.default_rng(1).integers(0, len(vectors), QUERIES))
    start = time.perf_counter()
    index.search(queries, K)
    query_s = time.perf_counter() - start
    print(
        json.dumps(
            {
                "build_s": build_s,
                "rss_growth": grown,
                "file_bytes": path.stat().st_size,
                "query_s": query_s,
                "recall": recall,
            }
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
