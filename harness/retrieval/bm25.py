"""Sparse retrieval with BM25 (bm25s). Defaults k1 = 0.9, b = 0.4 are Pyserini's, which FlashRAG's BM25 uses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenizer
from tqdm import tqdm

from harness.retrieval.base import RetrievalIndex
from harness.retrieval.store import BM25_DIR, Manifest, PassageStore

DEFAULT_PARAMS = {"k1": 0.9, "b": 0.4, "method": "lucene", "stopwords": "en"}
TOKENIZE_CHUNK = 10_000


def _tokenize_queries(queries: Sequence[str], stopwords: str) -> list[list[str]]:
    return bm25s.tokenize(list(queries), stopwords=stopwords, return_ids=False, show_progress=False)


def index_passages(directory: Path, params: dict, progress: bool) -> None:
    """Tokenise every passage of an index directory and write the BM25 index under ``bm25/``.

    Passages are read and tokenised ``TOKENIZE_CHUNK`` at a time into token ids over one growing vocabulary, so
    only the ids are ever held in memory (a wiki-18 corpus does not fit as text).
    """
    store = PassageStore(directory)
    tokenizer = Tokenizer(stopwords=params["stopwords"])
    token_ids: list[list[int]] = []
    with tqdm(total=len(store), unit="passage", desc="tokenizing passages", disable=not progress) as bar:
        for start in range(0, len(store), TOKENIZE_CHUNK):
            stop = min(start + TOKENIZE_CHUNK, len(store))
            texts = [contents for _, contents in store.rows(start, stop)]
            token_ids += tokenizer.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
            bar.update(stop - start)
    retriever = bm25s.BM25(k1=params["k1"], b=params["b"], method=params["method"])
    retriever.index((token_ids, tokenizer.get_vocab_dict()), show_progress=progress)
    retriever.save(str(directory / BM25_DIR))


class BM25Index(RetrievalIndex):
    """Top-k by BM25 score of the query's tokens (same tokenisation and stopwords as the passages; query terms
    missing from the vocabulary are ignored)."""

    def __init__(self, directory: Path, manifest: Manifest):
        super().__init__(directory, manifest)
        self.retriever = bm25s.BM25.load(str(Path(directory) / BM25_DIR), mmap=True)

    def _top_k(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        tokens = _tokenize_queries(queries, self.manifest.params["stopwords"])
        rows, scores = self.retriever.retrieve(tokens, k=k, show_progress=False)
        rows, scores = np.asarray(rows), np.asarray(scores)
        return np.where(scores > 0, rows, -1), scores  # a zero score shares no term with the query: not a hit
