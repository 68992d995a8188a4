"""An index directory's passages and manifest: the parts shared by dense and BM25 indexes.

Layout of an index directory::

    manifest.json     kind, model, prefixes, count, corpus hash ... (written last: its presence marks a finished build)
    passages.jsonl    the corpus rows, one {"id", "contents"} per line (or a link to an imported corpus)
    offsets.npy       byte offset of each row in passages.jsonl (count + 1 entries), for random access
    index.faiss    (dense: any faiss.index_factory type)      bm25/    (BM25, bm25s format)

Passages are read from disk on demand, so a wiki-scale corpus is never held in memory. A build writes into a
temporary directory next to the target (``.<name>.building-*``) and moves it into place only when complete: a build
that fails (a bad corpus line, a missing model, an interrupt) leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import numpy as np
from tqdm import tqdm

from mara_bench.harness.retrieval.corpus import RetrievalError, iter_corpus

MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
OFFSETS = "offsets.npy"
EMBEDDINGS = "embeddings.npy"
FAISS_INDEX = "index.faiss"
BM25_DIR = "bm25"
INDEX_ENTRIES = {MANIFEST, MANIFEST + ".tmp", PASSAGES, OFFSETS, EMBEDDINGS, FAISS_INDEX, BM25_DIR}
"""What an index directory may hold (``embeddings.npy``: format 1 dense indexes, replaced by a rebuild)."""
FORMAT_VERSION = 2

IndexKind = Literal["dense", "bm25"]


@dataclass(frozen=True)
class IndexQuality:
    """What kind of FAISS index was built and how close its top-k is to exact search."""

    index_type: str
    """The ``faiss.index_factory`` string."""
    search_params: str
    """``faiss.ParameterSpace`` settings applied when searching (``nprobe=32``), or empty."""
    train_rows: int
    """Vectors the index was trained on (0 for types that need no training)."""
    recall_k: int
    recall_at_k: float | None
    """Mean over the held-out queries of |top-k ∩ exact top-k| / k; 1.0 for ``Flat``; None when not measured
    (an imported approximate index, whose vectors are not at hand)."""
    recall_queries: int


@dataclass
class Manifest:
    """What an index directory holds and how it was built (queries must be encoded the same way)."""

    kind: IndexKind
    count: int
    """Number of passages."""
    corpus_sha256: str
    """SHA-256 of the corpus file's bytes."""
    corpus: str
    """The corpus file the index was built from (as given)."""
    model: str | None = None
    """Embedding model name or path (dense only)."""
    query_prefix: str = ""
    passage_prefix: str = ""
    dimension: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    """Kind-specific settings (pooling for dense; k1, b, method for BM25)."""
    dense_index: IndexQuality | None = None
    """The FAISS index type and its recall against exact search (dense only)."""
    format: int = FORMAT_VERSION

    def save(self, directory: Path) -> None:
        temporary = directory / (MANIFEST + ".tmp")
        temporary.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(temporary, directory / MANIFEST)

    @classmethod
    def load(cls, directory: Path) -> Manifest:
        path = Path(directory) / MANIFEST
        if not path.is_file():
            raise RetrievalError(
                f"{directory} is not a retrieval index (no {MANIFEST}); build one with "
                "`mara index build CORPUS.jsonl OUT/`"
            )
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT_VERSION:
            raise RetrievalError(
                f"{path}: index format {data.get('format')!r} is not {FORMAT_VERSION}; rebuild it"
            )
        if data.get("dense_index") is not None:
            data["dense_index"] = IndexQuality(**data["dense_index"])
        return cls(**data)


@contextlib.contextmanager
def building(directory: Path) -> Iterator[Path]:
    """A fresh temporary directory beside ``directory`` to build an index in; moved to ``directory`` on success.

    ``directory`` may be missing, empty or an older index (replaced); one holding anything else is refused before
    any work, so a typo cannot clobber data. On any error the temporary directory is removed and ``directory``
    is left untouched.
    """
    directory = Path(directory)
    entries = sorted(entry.name for entry in directory.iterdir()) if directory.is_dir() else []
    foreign = [name for name in entries if name not in INDEX_ENTRIES]
    if foreign or (directory.exists() and not directory.is_dir()):
        raise RetrievalError(
            f"output directory {directory} is not empty and holds no index "
            f"(found {', '.join(foreign[:3]) or 'a file'}); choose an empty one"
        )
    directory.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{directory.name}.building-", dir=directory.parent))
    try:
        yield work
        _move_into_place(work, directory)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _move_into_place(work: Path, directory: Path) -> None:
    """Rename the finished ``work`` to ``directory``, an older index there renamed aside first and then removed."""
    old = None
    if directory.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
        os.replace(directory, old)
    os.replace(work, directory)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def copy_corpus(corpus: Path, directory: Path, progress: bool = False) -> tuple[int, str]:
    """Copy a corpus into ``directory`` as passages + offsets; returns ``(count, sha256 of the corpus file)``.

    ``progress`` shows a bar over the corpus file's bytes (wiki-18 is 13 GiB: reading it takes minutes).
    """
    with (directory / PASSAGES).open("wb") as out:
        return _index_rows(corpus, directory, progress, out)


def link_corpus(corpus: Path, directory: Path, progress: bool = False) -> tuple[int, str]:
    """Serve ``corpus`` in place: ``passages.jsonl`` links to it and ``offsets.npy`` indexes its lines.

    Every line is checked as ``copy_corpus`` checks it; a blank line is refused, since rows are lines here.
    """
    corpus = Path(corpus).resolve()
    count, sha256 = _index_rows(corpus, directory, progress, None)
    (directory / PASSAGES).symlink_to(corpus)
    return count, sha256


def _index_rows(corpus: Path, directory: Path, progress: bool, out: BinaryIO | None) -> tuple[int, str]:
    """Read every row of ``corpus`` once (hash, offsets, checks), writing each row to ``out`` when given."""
    digest = hashlib.sha256()
    offsets = [0]
    lines = 0
    size = corpus.stat().st_size if corpus.is_file() else None
    bar = tqdm(total=size, unit="B", unit_scale=True, desc="reading corpus", disable=not progress)

    def read(raw: bytes) -> None:
        nonlocal lines
        lines += 1
        digest.update(raw)
        bar.update(len(raw))
        if out is None:
            if not raw.strip():
                raise RetrievalError(
                    f"{corpus}:{lines}: blank line; a corpus served in place has one row a line"
                )
            offsets.append(offsets[-1] + len(raw))

    with bar:
        for passage_id, contents in iter_corpus(corpus, on_bytes=read):
            if out is not None:
                line = (
                    json.dumps({"id": passage_id, "contents": contents}, ensure_ascii=False) + "\n"
                ).encode()
                out.write(line)
                offsets.append(offsets[-1] + len(line))
    if len(offsets) == 1:
        raise RetrievalError(f"corpus {corpus} has no passages")
    np.save(directory / OFFSETS, np.asarray(offsets, dtype=np.int64))
    return len(offsets) - 1, digest.hexdigest()


class PassageStore:
    """Random access to an index directory's passages by row number."""

    def __init__(self, directory: Path):
        self._offsets = np.load(Path(directory) / OFFSETS, mmap_mode="r")
        self._path = Path(directory) / PASSAGES
        self._fd = os.open(self._path, os.O_RDONLY)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def rows(self, start: int, stop: int) -> list[tuple[str, str]]:
        """``(id, contents)`` of rows ``start .. stop - 1`` with one read."""
        begin, end = int(self._offsets[start]), int(self._offsets[stop])
        data = os.pread(self._fd, end - begin, begin)
        return [self._decode(line) for line in data.splitlines()]

    def row(self, number: int) -> tuple[str, str]:
        return self.rows(number, number + 1)[0]

    @staticmethod
    def _decode(line: bytes) -> tuple[str, str]:
        record = json.loads(line)
        return str(record["id"]), record["contents"]  # an imported corpus may have integer ids
