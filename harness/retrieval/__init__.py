"""Local corpus retrieval: index a ``{"id", "contents"}`` corpus (wiki-18 format) densely (E5 through
sentence-transformers + FAISS) or with BM25 (bm25s), save it as a directory, and search it for top-k passages.

    manifest = build_index("corpus.jsonl", "index/", kind="dense")      # or `mara index build corpus.jsonl index/`
    index = load_index("index/")
    index.search("who wrote hamlet", k=5)             # -> [Passage(id, title, text, score), ...]
    index.search_many(["q1", "q2"], k=5)              # batched

The names below load their module on first use, so importing the package (as the tools and the look-up task
do) costs nothing until an index is built or opened: FAISS, sentence-transformers and bm25s stay unloaded.
"""

from mara_bench.core.named import lazy_attributes

_HOMES = {
    "RetrievalIndex": "base",
    "Passage": "corpus",
    "RetrievalError": "corpus",
    "iter_corpus": "corpus",
    "split_contents": "corpus",
    "DEFAULT_MODEL": "encoder",
    "TextEncoder": "encoder",
    "KINDS": "index",
    "build_index": "index",
    "load_index": "index",
    "open_index": "index",
    "Manifest": "store",
}
"""Each public name and the submodule that defines it."""

__getattr__ = lazy_attributes(__name__, {name: f"{__name__}.{home}" for name, home in _HOMES.items()})


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
