"""Sparse retrieval with BM25, configured as FlashRAG's bm25s backend builds it, in bm25s's own index format.

FlashRAG tokenises with ``bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))`` and
indexes with ``bm25s.BM25()``'s defaults (Lucene BM25, k1 = 1.5, b = 0.75); the scores here equal that index's, and
the ``bm25/`` directory holds the same files (bm25s's matrix and vocabulary, the tokenizer's vocabulary and stop
words), so an index FlashRAG built is served as is and one built here can be read by FlashRAG.

The build holds no token lists: each chunk of passages becomes numpy arrays of (passage, term, count) on disk,
then the score matrix is filled column by column into its memory-mapped output files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from mara_bench.harness.retrieval.base import RetrievalIndex
from mara_bench.harness.retrieval.corpus import RetrievalError
from mara_bench.harness.retrieval.store import BM25_DIR, Manifest, PassageStore

if TYPE_CHECKING:
    from bm25s.tokenization import Tokenizer

DEFAULT_PARAMS = {"k1": 1.5, "b": 0.75, "method": "lucene", "stopwords": "en", "stemmer": "english"}
TOKENIZE_CHUNK = 10_000
SCRATCH = "terms.building"
MATRIX_FILES = {
    "data": "data.csc.index.npy",
    "indices": "indices.csc.index.npy",
    "indptr": "indptr.csc.index.npy",
}
VOCAB_FILE, PARAMS_FILE = "vocab.index.json", "params.index.json"
TOKENIZER_VOCAB = "vocab.tokenizer.json"


def flashrag_tokenizer(params: dict) -> Tokenizer:
    """The tokenizer FlashRAG's bm25s backend uses for English corpora (stop words, then the Snowball stemmer).

    bm25s is imported here, not with the module: it imports numba where numba is installed, and whatever imports
    this module (the trainer's look-up tasks) should not pay for that, nor hand numba's objects to an in-process
    vLLM engine, whose kernel dispatcher scans every loaded module."""
    import Stemmer
    from bm25s.tokenization import Tokenizer

    return Tokenizer(stopwords=params["stopwords"], stemmer=Stemmer.Stemmer(params["stemmer"]))


def _term_counts(token_ids: list[list[int]], first_row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, terms, counts)`` of every distinct term in each passage, passages in order."""
    lengths = np.fromiter((len(ids) for ids in token_ids), dtype=np.int64, count=len(token_ids))
    terms = np.fromiter((t for ids in token_ids for t in ids), dtype=np.int64, count=int(lengths.sum()))
    rows = np.repeat(np.arange(first_row, first_row + len(token_ids), dtype=np.int64), lengths)
    pairs, counts = np.unique(rows << 32 | terms, return_counts=True)
    return (pairs >> 32).astype(np.int32), (pairs & 0xFFFFFFFF).astype(np.int32), counts.astype(np.float32)


def _tokenize_to_disk(store: PassageStore, tokenizer: Tokenizer, scratch: Path, progress: bool) -> np.ndarray:
    """Write each chunk's ``(rows, terms, counts)`` under ``scratch``; returns every passage's token count."""
    lengths = np.empty(len(store), dtype=np.int64)
    with tqdm(total=len(store), unit="passage", desc="tokenizing passages", disable=not progress) as bar:
        for chunk, start in enumerate(range(0, len(store), TOKENIZE_CHUNK)):
            stop = min(start + TOKENIZE_CHUNK, len(store))
            texts = [contents for _, contents in store.rows(start, stop)]
            token_ids = tokenizer.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
            lengths[start:stop] = [len(ids) for ids in token_ids]
            np.savez(scratch / f"{chunk}.npz", *_term_counts(token_ids, start))
            bar.update(stop - start)
    return lengths


def _chunks(scratch: Path) -> list[Path]:
    return sorted(scratch.glob("*.npz"), key=lambda path: int(path.stem))


def _write_score_matrix(scratch: Path, lengths: np.ndarray, vocab_size: int, params: dict, out: Path) -> None:
    """The passage x term matrix of Lucene BM25 scores in CSC form, as bm25s computes and saves it."""
    frequencies = np.zeros(vocab_size, dtype=np.int64)
    for path in _chunks(scratch):
        with np.load(path) as chunk:
            frequencies += np.bincount(chunk["arr_1"], minlength=vocab_size)
    count, average = len(lengths), lengths.mean()
    idf = np.zeros(vocab_size, dtype=np.float32)
    seen = frequencies > 0
    idf[seen] = np.log(1 + (count - frequencies[seen] + 0.5) / (frequencies[seen] + 0.5))
    indptr = np.zeros(vocab_size + 1, dtype=np.int64)
    np.cumsum(frequencies, out=indptr[1:])
    np.save(out / MATRIX_FILES["indptr"], indptr)
    data = np.lib.format.open_memmap(out / MATRIX_FILES["data"], "w+", np.float32, (int(indptr[-1]),))
    indices = np.lib.format.open_memmap(out / MATRIX_FILES["indices"], "w+", np.int32, (int(indptr[-1]),))
    cursor = indptr[:-1].copy()
    k1, b = params["k1"], params["b"]
    for path in _chunks(scratch):
        with np.load(path) as chunk:
            rows, terms, counts = chunk["arr_0"], chunk["arr_1"], chunk["arr_2"]
        norm = k1 * ((1 - b) + b * lengths[rows] / average)  # float64, as bm25s computes it per passage
        scores = (idf[terms] * (counts / (norm + counts))).astype(np.float32)
        order = np.argsort(terms, kind="stable")  # per term, passages stay in order
        terms = terms[order]
        per_term = np.bincount(terms, minlength=vocab_size)
        first = np.cumsum(per_term) - per_term
        places = cursor[terms] + np.arange(len(terms)) - first[terms]
        data[places], indices[places] = scores[order], rows[order]
        cursor += per_term
    data.flush()
    indices.flush()


def index_passages(directory: Path, params: dict, progress: bool) -> None:
    """Tokenise every passage of an index directory and write the BM25 index under ``bm25/``.

    Passages are tokenised ``TOKENIZE_CHUNK`` at a time over one growing vocabulary; only numpy arrays of term
    counts are kept, on disk, until the score matrix is written.
    """
    store, out, scratch = PassageStore(directory), directory / BM25_DIR, directory / SCRATCH
    out.mkdir()
    scratch.mkdir()
    try:
        tokenizer = flashrag_tokenizer(params)
        lengths = _tokenize_to_disk(store, tokenizer, scratch, progress)
        vocab = tokenizer.get_vocab_dict()
        _write_score_matrix(scratch, lengths, len(vocab), params, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (out / VOCAB_FILE).write_text(json.dumps(vocab, ensure_ascii=False))
    import bm25s

    settings = bm25s.BM25(k1=params["k1"], b=params["b"], method=params["method"])
    saved = {name: getattr(settings, name) for name in ("k1", "b", "delta", "method", "idf_method")}
    saved.update(dtype="float32", int_dtype="int32", num_docs=len(store), version=bm25s.__version__)
    saved["backend"] = settings.backend
    (out / PARAMS_FILE).write_text(json.dumps(saved, indent=4))
    tokenizer.save_vocab(str(out))
    tokenizer.save_stopwords(str(out))


class BM25Index(RetrievalIndex):
    """Top-k by BM25 score of the query's stemmed tokens; query terms missing from the vocabulary are ignored."""

    def __init__(self, directory: Path, manifest: Manifest):
        super().__init__(directory, manifest)
        bm25_dir = Path(directory) / BM25_DIR
        if not (bm25_dir / TOKENIZER_VOCAB).is_file():
            raise RetrievalError(
                f"{bm25_dir} has no {TOKENIZER_VOCAB} (a bm25s index saved without its tokenizer); rebuild it "
                "with `mara index build CORPUS.jsonl DIR/ --kind bm25`"
            )
        import bm25s

        self.retriever: Any = bm25s.BM25.load(str(bm25_dir), mmap=True)
        self.tokenizer = flashrag_tokenizer(manifest.params)
        self.tokenizer.load_vocab(str(bm25_dir))
        self.tokenizer.load_stopwords(str(bm25_dir))

    def tokenize(self, queries: Sequence[str]) -> list[list[str]]:
        return self.tokenizer.tokenize(
            list(queries), update_vocab="never", return_as="string", show_progress=False
        )

    def _top_k(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        rows, scores = self.retriever.retrieve(self.tokenize(queries), k=k, show_progress=False)
        rows, scores = np.asarray(rows), np.asarray(scores)
        return np.where(scores > 0, rows, -1), scores  # a zero score shares no term with the query: not a hit
