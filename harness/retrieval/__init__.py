"""Local corpus retrieval: index a ``{"id", "contents"}`` corpus (wiki-18 format) densely (E5 through
sentence-transformers + FAISS) or with BM25 (bm25s), save it as a directory, and search it for top-k passages.

    manifest = build_index("corpus.jsonl", "index/", kind="dense")      # or `mara index build corpus.jsonl index/`
    index = load_index("index/")
    index.search("who wrote hamlet", k=5)             # -> [Passage(id, title, text, score), ...]
    index.search_many(["q1", "q2"], k=5)              # batched
"""

from harness.retrieval.base import RetrievalIndex
from harness.retrieval.corpus import Passage, RetrievalError, iter_corpus, split_contents
from harness.retrieval.encoder import DEFAULT_MODEL, TextEncoder
from harness.retrieval.index import KINDS, build_index, load_index, open_index
from harness.retrieval.store import Manifest

__all__ = [
    "DEFAULT_MODEL",
    "KINDS",
    "Manifest",
    "Passage",
    "RetrievalError",
    "RetrievalIndex",
    "TextEncoder",
    "build_index",
    "iter_corpus",
    "load_index",
    "open_index",
    "split_contents",
]
