"""Build a FAISS index of any ``faiss.index_factory`` type from vectors on disk, without holding them all in RAM.

* Types that store one code per vector (``Flat``, ``SQfp16``, ``SQ8``, ``PQ64`` ...) are written straight to the
  index file: header, then each block's codes as it is encoded (``write_flat_codes``).
* Other types (``IVF4096,PQ64``, ``HNSW32`` ...) are trained on a sample of rows and filled block by block; only
  their own structure (IVF lists of codes, an HNSW graph) grows in memory, never the raw vectors.

The index's recall@k against exact inner-product search is measured on a held-out sample of stored vectors used
as queries (rows kept out of training) and returned as ``IndexQuality``, recorded in the index manifest.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path

import faiss
import numpy as np

from mara_bench.harness.retrieval.corpus import RetrievalError
from mara_bench.harness.retrieval.store import IndexQuality
from mara_bench.harness.retrieval.vector_file import VectorFile

EXACT_TYPE = "Flat"
RECALL_K = 10
BLOCK_ROWS = 4_096
MIN_TRAIN_ROWS = 100_000
TRAIN_ROWS_PER_LIST = 64
NTOTAL_OFFSET = 8  # every index header: fourcc (4 bytes), d (int32), then ntotal (int64)


def faiss_reason(err: RuntimeError) -> str:
    """FAISS's own message without its C++ location prefix."""
    return str(err).strip().splitlines()[-1].split("Error: ")[-1]


def check_buildable(index_type: str, dimension: int, count: int) -> None:
    """Refuse, before any encoding, a type that cannot be trained on ``count`` vectors (IVF lists > vectors)."""
    ivf = faiss.try_extract_index_ivf(new_index(index_type, dimension))
    if ivf is not None and ivf.nlist > count:
        fewer = 2 ** max(0, int(count**0.5).bit_length() - 1)  # about sqrt(N), a power of two
        raise RetrievalError(
            f"index type {index_type!r} has {ivf.nlist} IVF lists but the corpus has {count} passages; "
            f"choose fewer lists (IVF{fewer}: about sqrt(N)) or Flat"
        )


def new_index(index_type: str, dimension: int) -> faiss.Index:
    """An empty inner-product index of ``index_type``; an unknown factory string is a ``RetrievalError``."""
    try:
        return faiss.index_factory(dimension, index_type, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        reason = faiss_reason(err)
        raise RetrievalError(
            f"index type {index_type!r} is not a faiss.index_factory string ({reason}); "
            "try Flat, SQfp16, HNSW32 or IVF4096,PQ64"
        ) from err


def apply_search_params(index: faiss.Index, search_params: str) -> None:
    if search_params:
        try:
            faiss.ParameterSpace().set_index_parameters(index, search_params)
        except RuntimeError as err:
            raise RetrievalError(
                f"search parameters {search_params!r} do not apply to this index ({err})"
            ) from err


def _flat_codes_layout(template: faiss.Index, count: int) -> tuple[bytes, bytes]:
    """The bytes before and after the codes of a ``count``-row index file of ``template``'s (trained) type.

    Taken from the serialisation of a two-vector index of the same type, with ``ntotal`` and the codes' size
    field set for ``count`` rows: the file ``write_flat_codes`` writes is byte for byte ``faiss.write_index``'s.
    """
    probe = np.random.default_rng(0).standard_normal((2, template.d)).astype(np.float32)
    probe_index = faiss.clone_index(template)
    probe_index.add(probe)
    data = faiss.serialize_index(probe_index).tobytes()
    codes = template.sa_encode(probe).tobytes()
    at = data.find(codes)
    if at < 8 or data.find(codes, at + 1) != -1 or int.from_bytes(data[8:16], "little") != 2:
        raise RetrievalError(f"cannot stream an index of type {type(template).__name__}; choose another type")
    unit = len(codes) // int.from_bytes(data[at - 8 : at], "little")  # the size is in bytes or 4-byte words
    head = bytearray(data[: at - 8])
    head[NTOTAL_OFFSET : NTOTAL_OFFSET + 8] = count.to_bytes(8, "little")
    size_field = (count * template.sa_code_size() // unit).to_bytes(8, "little")
    return bytes(head) + size_field, data[at + len(codes) :]


def write_flat_codes(template: faiss.Index, count: int, path: Path, blocks: Iterable[np.ndarray]) -> None:
    """Write a one-code-per-vector index (``faiss.IndexFlatCodes``) of the ``count`` rows in ``blocks`` to
    ``path``, each block encoded and written as it comes (for ``Flat`` the codes are the float32 vectors)."""
    head, tail = _flat_codes_layout(template, count)
    written = 0
    with Path(path).open("wb") as handle:
        handle.write(head)
        for vectors in blocks:
            written += len(vectors)
            if written > count:
                raise RetrievalError(f"more than the {count} announced vectors were written")
            handle.write(template.sa_encode(np.ascontiguousarray(vectors, dtype=np.float32)).data)
        if written != count:
            raise RetrievalError(f"{written} vectors written where {count} were announced")
        handle.write(tail)


def read_faiss(path: Path, search_params: str = "") -> faiss.Index:
    """Load an index memory-mapped where FAISS allows (flat codes, IVF lists, HNSW storage) and move it to the GPU
    when GPU FAISS and a GPU are present."""
    index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
    if getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
        with contextlib.suppress(RuntimeError):  # a type without a GPU implementation (HNSW) stays on the CPU
            index = faiss.index_cpu_to_all_gpus(index)
    apply_search_params(index, search_params)
    return index


def _training_rows(index: faiss.Index, count: int, wanted: int | None) -> int:
    if index.is_trained:
        return 0
    if wanted is None:
        ivf = faiss.try_extract_index_ivf(index)
        wanted = max(MIN_TRAIN_ROWS, TRAIN_ROWS_PER_LIST * (ivf.nlist if ivf is not None else 0))
    return min(count, wanted)


def _exact_top_k(vectors: VectorFile, queries: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of the exact inner-product top-k per query, one pass over the file in blocks."""
    heap = faiss.ResultHeap(len(queries), k, keep_max=True)
    for start, block in vectors.blocks(BLOCK_ROWS):
        scores, rows = faiss.knn(queries, block, min(k, len(block)), metric=faiss.METRIC_INNER_PRODUCT)
        heap.add_result(np.ascontiguousarray(scores), np.ascontiguousarray(rows + start))
    heap.finalize()
    return heap.I


def measure_recall(index: faiss.Index, vectors: VectorFile, query_rows: np.ndarray, k: int) -> float:
    queries = vectors.take(query_rows)
    exact = _exact_top_k(vectors, queries, k)
    _, found = index.search(queries, k)
    return float(
        np.mean([len(set(a) & set(b)) / k for a, b in zip(found.tolist(), exact.tolist(), strict=True)])
    )


def build_faiss_index(
    vectors: VectorFile,
    index_type: str,
    path: Path,
    *,
    search_params: str = "",
    train_rows: int | None = None,
    recall_queries: int = 256,
    recall_k: int = RECALL_K,
    seed: int = 0,
) -> IndexQuality:
    """Index every row of ``vectors`` into a ``index_type`` index written to ``path``; returns its quality.

    ``train_rows`` (default: max(100,000, 64 per IVF list), at most the corpus) rows are drawn at random to train
    types that need it; ``recall_queries`` other rows are the held-out queries for recall@``recall_k``.
    """
    count, template = len(vectors), new_index(index_type, vectors.dimension)
    rng = np.random.default_rng(seed)
    order = rng.permutation(count)
    query_rows = np.sort(order[: min(recall_queries, count)])
    training = _training_rows(template, count, train_rows)
    train_sample = order[len(query_rows) : len(query_rows) + training] if count > len(query_rows) else order
    if training:
        try:
            template.train(vectors.take(np.sort(train_sample)))
        except RuntimeError as err:
            raise RetrievalError(
                f"cannot train {index_type!r} on {training} vectors ({faiss_reason(err)})"
            ) from err
    if isinstance(template, faiss.IndexFlatCodes):
        write_flat_codes(template, count, path, (block for _, block in vectors.blocks(BLOCK_ROWS)))
    else:
        for _, block in vectors.blocks(BLOCK_ROWS):
            template.add(block)
        faiss.write_index(template, str(path))
    del template
    if index_type == EXACT_TYPE:
        recall = 1.0
    else:
        recall = measure_recall(read_faiss(path, search_params), vectors, query_rows, min(recall_k, count))
    return IndexQuality(
        index_type=index_type,
        search_params=search_params,
        train_rows=len(train_sample) if training else 0,
        recall_k=recall_k,
        recall_at_k=recall,
        recall_queries=len(query_rows),
    )
