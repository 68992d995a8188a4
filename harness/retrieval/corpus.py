"""Read retrieval corpora: JSON lines of ``{"id", "contents"}`` with ``contents = "title\\ntext"`` (wiki-18 format).

FlashRAG's wiki-18 corpus writes the title on the first line of ``contents``, wrapped in double quotes
(``"\\"Aaron\\"\\nAaron is a prophet ..."``); the quotes are dropped from ``Passage.title``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


class RetrievalError(ValueError):
    """A corpus, index directory or embedding model the user pointed at cannot be used (the message says why)."""


@dataclass(frozen=True)
class Passage:
    """One retrieved passage."""

    id: str
    """The corpus ``id`` of the passage."""
    title: str
    text: str
    score: float
    """Retrieval score: inner product of normalised embeddings (dense) or BM25 score; higher is better."""
    contents: str = ""
    """The corpus row's ``contents`` verbatim (title line included), as M-ASK hands a passage to its agents."""


def split_contents(contents: str) -> tuple[str, str]:
    """Split wiki-18 ``contents`` into ``(title, text)``; contents without a newline are all text."""
    title, newline, text = contents.partition("\n")
    if not newline:
        return "", contents
    title = title.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, text


def iter_corpus(path: Path, on_bytes: Callable[[bytes], object] | None = None) -> Iterator[tuple[str, str]]:
    """Yield ``(id, contents)`` per line of a corpus file; blank lines are skipped.

    ``on_bytes`` (e.g. ``hashlib.sha256().update``) receives the file's raw bytes as they are read, so one pass
    both loads and fingerprints the corpus. A malformed line raises ``RetrievalError`` naming file, line and field.
    """
    path = Path(path)
    if not path.is_file():
        raise RetrievalError(f"corpus file not found: {path}")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if on_bytes is not None:
                on_bytes(raw)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as err:
                raise RetrievalError(f"{path}:{number}: not a JSON object ({err.msg})") from err
            if not isinstance(record, dict):
                raise RetrievalError(f"{path}:{number}: expected a JSON object with 'id' and 'contents'")
            for field in ("id", "contents"):
                if field not in record:
                    raise RetrievalError(
                        f"{path}:{number}: missing field {field!r} (corpus rows are {{'id', 'contents'}})"
                    )
            if not isinstance(record["id"], str | int) or isinstance(record["id"], bool):
                raise RetrievalError(
                    f"{path}:{number}: field 'id' must be a string or an integer, got {record['id']!r}"
                )
            if not isinstance(record["contents"], str):
                raise RetrievalError(
                    f"{path}:{number}: field 'contents' must be a string, got {type(record['contents']).__name__}"
                )
            yield str(record["id"]), record["contents"]
