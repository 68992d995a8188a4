"""Dense retrieval: passages embedded with a ``TextEncoder`` into a FAISS inner-product index of any factory type.

Embeddings are streamed to disk a batch at a time: an exact ``Flat`` index is written directly as its file, other
types go through a scratch vector file (deleted after the build) that ``faiss_build`` trains on and indexes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from tqdm import tqdm

from mara_bench.harness.retrieval.base import RetrievalIndex
from mara_bench.harness.retrieval.corpus import RetrievalError
from mara_bench.harness.retrieval.encoder import TextEncoder
from mara_bench.harness.retrieval.faiss_build import (
    EXACT_TYPE,
    RECALL_K,
    IndexQuality,
    build_faiss_index,
    check_buildable,
    new_index,
    read_faiss,
    write_flat_codes,
)
from mara_bench.harness.retrieval.store import FAISS_INDEX, Manifest, PassageStore
from mara_bench.harness.retrieval.vector_file import VectorFile

SCRATCH_VECTORS = "vectors.f32.building"


def _embedded_batches(
    directory: Path, encoder: TextEncoder, batch_size: int, progress: bool
) -> Iterator[np.ndarray]:
    store = PassageStore(directory)
    with tqdm(total=len(store), unit="passage", desc="embedding passages", disable=not progress) as bar:
        for start in range(0, len(store), batch_size):
            stop = min(start + batch_size, len(store))
            yield encoder.encode_passages([contents for _, contents in store.rows(start, stop)], batch_size)
            bar.update(stop - start)


def embed_passages(
    directory: Path,
    encoder: TextEncoder,
    batch_size: int,
    progress: bool,
    *,
    index_type: str = EXACT_TYPE,
    search_params: str = "",
    train_rows: int | None = None,
) -> IndexQuality:
    """Embed every passage of an index directory into ``index.faiss`` (a ``faiss.index_factory`` type)."""
    count = len(PassageStore(directory))
    check_buildable(index_type, encoder.dimension, count)  # before any encoding
    batches = _embedded_batches(directory, encoder, batch_size, progress)
    if index_type == EXACT_TYPE:
        write_flat_codes(new_index(EXACT_TYPE, encoder.dimension), count, directory / FAISS_INDEX, batches)
        return IndexQuality(EXACT_TYPE, search_params, 0, RECALL_K, 1.0, 0)
    scratch = VectorFile(directory / SCRATCH_VECTORS, encoder.dimension)
    try:
        with scratch.path.open("wb") as handle:
            for vectors in batches:
                scratch.append(handle, vectors)
        return build_faiss_index(
            scratch, index_type, directory / FAISS_INDEX, search_params=search_params, train_rows=train_rows
        )
    finally:
        with contextlib.suppress(FileNotFoundError):
            scratch.path.unlink()


class DenseIndex(RetrievalIndex):
    """Top-k by inner product between the normalised query embedding and every passage embedding."""

    def __init__(
        self, directory: Path, manifest: Manifest, *, model: str | None = None, device: str | None = None
    ):
        super().__init__(directory, manifest)
        self.encoder = TextEncoder(
            model or manifest.model,
            query_prefix=manifest.query_prefix,
            passage_prefix=manifest.passage_prefix,
            device=device,
        )
        if self.encoder.dimension != manifest.dimension:
            raise RetrievalError(
                f"model {self.encoder.model_name!r} embeds into {self.encoder.dimension} dimensions but the index "
                f"at {directory} was built with {manifest.dimension} ({manifest.model!r}); use the same model"
            )
        quality = manifest.dense_index
        self.faiss_index = read_faiss(Path(directory) / FAISS_INDEX, quality.search_params if quality else "")

    def _top_k(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, rows = self.faiss_index.search(self.encoder.encode_queries(queries), k)
        return rows, scores
