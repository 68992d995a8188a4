"""Dense retrieval: passages embedded once with a ``TextEncoder`` into an exact FAISS inner-product index."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
from tqdm import tqdm

from harness.retrieval.base import RetrievalIndex
from harness.retrieval.corpus import RetrievalError
from harness.retrieval.encoder import TextEncoder
from harness.retrieval.store import EMBEDDINGS, FAISS_INDEX, Manifest, PassageStore


def embed_passages(directory: Path, encoder: TextEncoder, batch_size: int, progress: bool) -> None:
    """Embed every passage of an index directory, writing ``embeddings.npy`` and ``index.faiss``."""
    store = PassageStore(directory)
    count, dimension = len(store), encoder.dimension
    embeddings = np.lib.format.open_memmap(
        directory / EMBEDDINGS, mode="w+", dtype=np.float32, shape=(count, dimension)
    )
    index = faiss.IndexFlatIP(dimension)
    with tqdm(total=count, unit="passage", desc="embedding passages", disable=not progress) as bar:
        for start in range(0, count, batch_size):
            stop = min(start + batch_size, count)
            vectors = encoder.encode_passages(
                [contents for _, contents in store.rows(start, stop)], batch_size
            )
            embeddings[start:stop] = vectors
            index.add(vectors)
            bar.update(stop - start)
    embeddings.flush()
    faiss.write_index(index, str(directory / FAISS_INDEX))


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
        self.faiss_index = faiss.read_index(str(Path(directory) / FAISS_INDEX))

    def _top_k(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, rows = self.faiss_index.search(self.encoder.encode_queries(queries), k)
        return rows, scores
