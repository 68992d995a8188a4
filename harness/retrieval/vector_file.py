"""A file of float32 vectors written batch by batch and read back a block at a time, never held whole in memory.

Rows are raw little-endian float32, ``dimension`` per row, starting ``offset`` bytes into the file (a flat FAISS
index file is such a file behind a header). Reads use ``os.pread`` rather than a memory map, so pages read once
stay in the page cache, not in the process's resident set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROW_DTYPE = np.dtype("<f4")


class VectorFile:
    """Rows ``0 .. count - 1`` of ``dimension`` float32 values at byte ``offset`` of ``path``."""

    def __init__(self, path: Path, dimension: int, offset: int = 0):
        self.path, self.dimension, self.offset = Path(path), dimension, offset
        self.row_bytes = dimension * ROW_DTYPE.itemsize

    def __len__(self) -> int:
        return (self.path.stat().st_size - self.offset) // self.row_bytes

    def append(self, handle, vectors: np.ndarray) -> None:
        """Write ``vectors`` (shape ``(n, dimension)``) at the end of the open binary ``handle``."""
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise ValueError(f"expected vectors of shape (n, {self.dimension}), got {vectors.shape}")
        handle.write(np.ascontiguousarray(vectors, dtype=ROW_DTYPE).tobytes())

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start .. stop - 1`` as a fresh array."""
        with self.path.open("rb") as handle:
            return self._read(handle.fileno(), start, stop)

    def blocks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, vectors)`` for consecutive blocks of at most ``rows`` rows, in order."""
        count = len(self)
        with self.path.open("rb") as handle:
            for start in range(0, count, rows):
                yield start, self._read(handle.fileno(), start, min(start + rows, count))

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The rows numbered ``rows`` (any order), one read each."""
        out = np.empty((len(rows), self.dimension), dtype=ROW_DTYPE)
        with self.path.open("rb") as handle:
            for place, row in enumerate(rows.tolist()):
                out[place] = self._read(handle.fileno(), row, row + 1)[0]
        return out

    def _read(self, fd: int, start: int, stop: int) -> np.ndarray:
        size = (stop - start) * self.row_bytes
        data = os.pread(fd, size, self.offset + start * self.row_bytes)
        if len(data) != size:
            raise ValueError(f"{self.path}: short read at rows {start}..{stop} (file truncated?)")
        return np.frombuffer(data, dtype=ROW_DTYPE).reshape(stop - start, self.dimension).copy()
