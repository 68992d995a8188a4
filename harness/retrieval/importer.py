"""Serve FlashRAG's released retrieval artefacts unchanged: its corpus JSONL with its dense FAISS index
(``e5_Flat.index``) or its bm25s index folder (``bm25/``).

FlashRAG's layout: the corpus has one ``{"id", "contents"}`` object per line, and row ``i`` of the FAISS index (an
inner-product index of E5 embeddings of ``"passage: " + contents``) is line ``i`` of the corpus; its bm25s folder
holds bm25s's saved matrix plus the tokenizer's ``vocab.tokenizer.json`` and ``stopwords.tokenizer.json``. The
import links those files into an index directory (nothing is copied or rewritten) after checking that row counts
and dimensions agree and that a few sampled passages, searched by their own text, come back first.
"""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np

from mara_bench.harness.retrieval.base import RetrievalIndex
from mara_bench.harness.retrieval.corpus import RetrievalError, split_contents
from mara_bench.harness.retrieval.encoder import DEFAULT_MODEL, PASSAGE_PREFIX, QUERY_PREFIX
from mara_bench.harness.retrieval.faiss_build import RECALL_K
from mara_bench.harness.retrieval.store import (
    BM25_DIR,
    FAISS_INDEX,
    IndexQuality,
    Manifest,
    building,
    link_corpus,
)

BM25_FILES = (
    "params.index.json",
    "vocab.index.json",
    "data.csc.index.npy",
    "indices.csc.index.npy",
    "indptr.csc.index.npy",
    "vocab.tokenizer.json",
    "stopwords.tokenizer.json",
)
FLASHRAG_BM25 = {"stopwords": "en", "stemmer": "english"}
CHECKED_PASSAGES = 3
SELF_SEARCH_K = 50
WIKI18_ROWS, WIKI18_FIRST_TITLE = 21_015_324, "Aaron"


def _existing(path: Path, what: str) -> Path:
    path = Path(path).resolve()
    if not path.exists():
        raise RetrievalError(f"{what} not found: {path}")
    return path


def _faiss_layout(path: Path, count: int) -> tuple[str, int]:
    """``(index type, dimension)`` of a FAISS file whose rows must number ``count``, read memory-mapped."""
    try:
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
    except RuntimeError as err:
        raise RetrievalError(
            f"{path} is not a FAISS index file ({str(err).strip().splitlines()[-1]})"
        ) from err
    if index.ntotal != count:
        raise RetrievalError(
            f"{path} holds {index.ntotal} vectors but the corpus has {count} rows; "
            "import the index built from this corpus"
        )
    if index.metric_type != faiss.METRIC_INNER_PRODUCT:
        raise RetrievalError(f"{path} does not rank by inner product (FlashRAG's metric); rebuild it")
    return type(faiss.downcast_index(index)).__name__, index.d


def _bm25_params(folder: Path, count: int) -> dict:
    if (folder / "segments.gen").exists() or any(folder.glob("segments_*")):
        raise RetrievalError(
            f"{folder} is a Pyserini (Lucene) index; mara serves bm25s indexes: build one with "
            "`mara index build CORPUS.jsonl DIR/ --kind bm25`"
        )
    missing = [name for name in BM25_FILES if not (folder / name).is_file()]
    if missing:
        raise RetrievalError(
            f"{folder} is not a bm25s index saved as FlashRAG saves it (missing {', '.join(missing)})"
        )
    saved = json.loads((folder / "params.index.json").read_text())
    if saved.get("num_docs") != count:
        raise RetrievalError(
            f"{folder} indexes {saved.get('num_docs')} passages but the corpus has {count} rows; "
            "import the index built from this corpus"
        )
    return {"k1": saved["k1"], "b": saved["b"], "method": saved["method"], **FLASHRAG_BM25}


def _self_search(index: RetrievalIndex, contents: str) -> tuple[list[int], list[float]]:
    """Rows and scores of the best ``SELF_SEARCH_K`` rows for a passage's own text, embedded or tokenised as the
    index's passages were."""
    if index.manifest.kind == "dense":
        scores, rows = index.faiss_index.search(index.encoder.encode_passages([contents]), SELF_SEARCH_K)
    else:
        rows, scores = index._top_k([contents], min(SELF_SEARCH_K, len(index)))
    return rows[0].tolist(), scores[0].tolist()


def _check_known_passages(index: RetrievalIndex) -> None:
    """Sampled passages searched by their own text come first (or tie with the first); wiki-18 starts at Aaron."""
    if len(index) == WIKI18_ROWS and split_contents(index.passages.row(0)[1])[0] != WIKI18_FIRST_TITLE:
        raise RetrievalError(
            f"corpus row 0 is not wiki-18's {WIKI18_FIRST_TITLE!r}: a different or reordered corpus"
        )
    for row in np.linspace(0, len(index) - 1, num=min(CHECKED_PASSAGES, len(index))).astype(int).tolist():
        passage_id, contents = index.passages.row(row)
        rows, scores = _self_search(index, contents)
        if row not in rows or not np.isclose(scores[rows.index(row)], scores[0], rtol=1e-4):
            raise RetrievalError(
                f"corpus row {row} (id {passage_id}) searched by its own text does not come first (row {rows[0]} "
                "does): the index rows do not follow the corpus lines, or the model differs from the index's"
            )


def import_flashrag(
    out: Path,
    corpus: Path,
    *,
    faiss_index: Path | None = None,
    bm25_dir: Path | None = None,
    model: str = DEFAULT_MODEL,
    query_prefix: str = QUERY_PREFIX,
    passage_prefix: str = PASSAGE_PREFIX,
    progress: bool = True,
) -> Manifest:
    """Make ``out`` an index directory serving FlashRAG's ``corpus`` with its ``faiss_index`` (dense, embedded by
    ``model``) or its ``bm25_dir``, linked in place; returns the manifest. Exactly one of the two is given."""
    from mara_bench.harness.retrieval.index import load_index

    if (faiss_index is None) == (bm25_dir is None):
        raise RetrievalError("give exactly one of --faiss INDEX_FILE or --bm25 BM25_DIR")
    corpus = _existing(corpus, "corpus file")
    source = _existing(faiss_index or bm25_dir, "FAISS index file" if faiss_index else "bm25s index folder")
    with building(Path(out)) as work:
        count, sha256 = link_corpus(corpus, work, progress)
        manifest = Manifest(
            kind="dense" if faiss_index else "bm25", count=count, corpus_sha256=sha256, corpus=str(corpus)
        )
        if faiss_index is not None:
            index_type, dimension = _faiss_layout(source, count)
            manifest.model, manifest.dimension = model, dimension
            manifest.query_prefix, manifest.passage_prefix = query_prefix, passage_prefix
            manifest.params = {
                "pooling": "mean",
                "normalized": True,
                "metric": "inner_product",
                "source": str(source),
            }
            exact = index_type == "IndexFlatIP"
            manifest.dense_index = IndexQuality(
                index_type="Flat" if exact else index_type,
                search_params="",
                train_rows=0,
                recall_k=RECALL_K,
                recall_at_k=1.0 if exact else None,
                recall_queries=0,
            )
            (work / FAISS_INDEX).symlink_to(source)
        else:
            manifest.params = {**_bm25_params(source, count), "source": str(source)}
            (work / BM25_DIR).symlink_to(source)
        manifest.save(work)
        _check_known_passages(load_index(work, model=model))
    return manifest
