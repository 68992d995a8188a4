"""Dense text encoder for retrieval: a sentence-transformers model with E5-style ``query: `` / ``passage: ``
prefixes and L2-normalised embeddings, so inner product is cosine similarity (the FlashRAG / Search-R1 set-up).

The pooling is the model's own sentence-transformers pooling; for ``intfloat/e5-base-v2`` (the default) and for
all-MiniLM-L6-v2 that is mean pooling, and a model without a sentence-transformers config gets mean pooling too.
The pooling mode is recorded in the index manifest.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import numpy as np

from mara_bench.harness.retrieval.corpus import RetrievalError

DEFAULT_MODEL = "intfloat/e5-base-v2"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=4)
def _load_model(name: str, device: str | None):
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(name, device=device)
    except (OSError, ValueError) as err:
        raise RetrievalError(
            f"cannot load embedding model {name!r} ({err}). Offline runs need the model in the local HF cache "
            "or a local directory: pass its path with --model (CLI) or model=... (Python)."
        ) from err


def pooling_mode(model) -> str:
    """The pooling a sentence-transformers model applies (``mean``, ``cls``, ...), or ``unknown``."""
    for module in model:
        mode = getattr(module, "pooling_mode", None)
        if mode is None and hasattr(module, "get_pooling_mode_str"):
            mode = module.get_pooling_mode_str()
        if mode is not None:
            return "+".join(mode) if isinstance(mode, list | tuple) else str(mode)
    return "unknown"


class TextEncoder:
    """Encode queries and passages with their prefixes into normalised float32 vectors."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        query_prefix: str = QUERY_PREFIX,
        passage_prefix: str = PASSAGE_PREFIX,
        device: str | None = None,
    ):
        self.model_name = model
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.model = _load_model(model, device)
        self.pooling = pooling_mode(self.model)
        if self.pooling != "mean":
            logger.warning(
                "embedding model %s pools with %r, not mean pooling (the E5 convention)", model, self.pooling
            )

    @property
    def dimension(self) -> int:
        get_dimension = (
            getattr(self.model, "get_embedding_dimension", None)
            or self.model.get_sentence_embedding_dimension
        )
        return int(get_dimension())

    def encode_queries(self, queries: Sequence[str], batch_size: int = 32) -> np.ndarray:
        return self._encode([self.query_prefix + query for query in queries], batch_size)

    def encode_passages(self, passages: Sequence[str], batch_size: int = 32) -> np.ndarray:
        return self._encode([self.passage_prefix + passage for passage in passages], batch_size)

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
