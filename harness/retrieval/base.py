"""The search interface every retrieval index offers: top-k passages for one query or a batch of queries."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mara_bench.harness.retrieval.corpus import Passage, RetrievalError, split_contents
from mara_bench.harness.retrieval.store import Manifest, PassageStore


class RetrievalIndex(ABC):
    """A loaded index directory. Subclasses rank rows; this class turns rows into ``Passage`` objects.

    Searches are serialised with a lock, so one index can serve concurrent tool calls from threads.
    """

    def __init__(self, directory: Path, manifest: Manifest):
        self.directory = Path(directory)
        self.manifest = manifest
        self.passages = PassageStore(directory)
        if len(self.passages) != manifest.count:
            raise RetrievalError(
                f"{directory}: manifest says {manifest.count} passages but the store holds {len(self.passages)}; "
                "the index is incomplete — rebuild it"
            )
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.manifest.count

    def search(self, query: str, k: int = 5) -> list[Passage]:
        """The ``k`` best passages for ``query``, best first."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int = 5) -> list[list[Passage]]:
        """The ``k`` best passages for each query (one batched encode/score for all queries), best first."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if isinstance(queries, str):
            raise TypeError("search_many takes a list of queries; use search() for one query")
        if not queries:
            return []
        with self._lock:
            rows, scores = self._top_k(list(queries), min(k, len(self)))
        return [
            self._passages(row_list, score_list) for row_list, score_list in zip(rows, scores, strict=True)
        ]

    def _passages(self, rows: np.ndarray, scores: np.ndarray) -> list[Passage]:
        found = []
        for row, score in zip(rows.tolist(), scores.tolist(), strict=True):
            if row < 0:  # FAISS pads with -1 when fewer than k rows exist
                continue
            passage_id, contents = self.passages.row(row)
            title, text = split_contents(contents)
            found.append(
                Passage(id=passage_id, title=title, text=text, score=float(score), contents=contents)
            )
        return found

    @abstractmethod
    def _top_k(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Row numbers and scores, each shaped ``(len(queries), k)``, best first."""
