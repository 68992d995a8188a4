"""Build an index directory from a corpus, and open one for search (dense or BM25, chosen by its manifest)."""

from __future__ import annotations

import functools
from pathlib import Path

from mara_bench.harness.retrieval import bm25, dense
from mara_bench.harness.retrieval.base import RetrievalIndex
from mara_bench.harness.retrieval.corpus import RetrievalError
from mara_bench.harness.retrieval.encoder import DEFAULT_MODEL, PASSAGE_PREFIX, QUERY_PREFIX, TextEncoder
from mara_bench.harness.retrieval.faiss_build import EXACT_TYPE, new_index
from mara_bench.harness.retrieval.store import IndexKind, Manifest, building, copy_corpus

KINDS: tuple[IndexKind, ...] = ("dense", "bm25")
PARSE_DIMENSION = 3840
"""A dimension every common PQ/OPQ split divides, to parse a factory string before the model's is known."""


def build_index(
    corpus: Path,
    out: Path,
    *,
    kind: IndexKind = "dense",
    model: str = DEFAULT_MODEL,
    query_prefix: str = QUERY_PREFIX,
    passage_prefix: str = PASSAGE_PREFIX,
    batch_size: int = 64,
    device: str | None = None,
    progress: bool = True,
    index_type: str = EXACT_TYPE,
    search_params: str = "",
    train_rows: int | None = None,
) -> Manifest:
    """Index a ``{"id", "contents"}`` JSON-lines corpus into directory ``out`` and return its manifest.

    ``kind="dense"`` embeds passages with ``model`` (sentence-transformers; prefixes as given, E5's by default)
    into a FAISS index of ``index_type`` (a ``faiss.index_factory`` string: ``Flat``, ``SQfp16``, ``HNSW32``,
    ``IVF4096,PQ64`` ...), trained on ``train_rows`` sampled passages where the type needs training and searched
    with ``search_params`` (``nprobe=32``); its recall@10 against exact search goes in the manifest.
    ``kind="bm25"`` builds a BM25 index and ignores the model settings. The index appears in ``out`` only when
    complete (``store.building``): a failed build leaves ``out`` as it was.
    """
    if kind not in KINDS:
        raise RetrievalError(f"unknown index kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "dense":
        new_index(index_type, PARSE_DIMENSION)  # a malformed factory string fails before the model loads
    if batch_size < 1:
        raise RetrievalError(f"batch size must be at least 1, got {batch_size}")
    encoder = (  # loaded first: a missing model fails before a long corpus copy
        TextEncoder(model, query_prefix=query_prefix, passage_prefix=passage_prefix, device=device)
        if kind == "dense"
        else None
    )
    with building(Path(out)) as work:
        count, sha256 = copy_corpus(Path(corpus), work, progress)
        manifest = Manifest(kind=kind, count=count, corpus_sha256=sha256, corpus=str(corpus))
        if encoder is not None:
            manifest.dense_index = dense.embed_passages(
                work,
                encoder,
                batch_size,
                progress,
                index_type=index_type,
                search_params=search_params,
                train_rows=train_rows,
            )
            manifest.model, manifest.dimension = model, encoder.dimension
            manifest.query_prefix, manifest.passage_prefix = query_prefix, passage_prefix
            manifest.params = {"pooling": encoder.pooling, "normalized": True, "metric": "inner_product"}
        else:
            manifest.params = dict(bm25.DEFAULT_PARAMS)
            bm25.index_passages(work, manifest.params, progress)
        manifest.save(work)
    return manifest


def load_index(directory: Path, *, model: str | None = None, device: str | None = None) -> RetrievalIndex:
    """Open an index directory. ``model`` overrides the manifest's embedding model (e.g. a moved local copy)."""
    directory = Path(directory)
    manifest = Manifest.load(directory)
    if manifest.kind == "dense":
        return dense.DenseIndex(directory, manifest, model=model, device=device)
    if manifest.kind == "bm25":
        return bm25.BM25Index(directory, manifest)
    raise RetrievalError(f"{directory}: unknown index kind {manifest.kind!r} in the manifest")


@functools.lru_cache(maxsize=4)
def open_index(directory: str, model: str | None = None) -> RetrievalIndex:
    """``load_index`` shared per process: toolboxes built per sample reuse one loaded index and model."""
    return load_index(Path(directory), model=model)
