"""What the tool cache did, counted per toolbox and per sample: hits, misses, records, live calls and transient
errors.

Kept apart from the cache itself so the accounting score can name the counts without importing any tool code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, fields


@dataclass
class CacheCounts:
    """What the cache did with tool calls."""

    hit: int = 0
    """Answered from the snapshot."""
    miss: int = 0
    """Replay found no recorded response (the agent got a tool error)."""
    record: int = 0
    """Responses stored."""
    live: int = 0
    """Calls that ran the real tool (the network, for the web tools)."""
    error: int = 0
    """Live calls that failed in a way that may not repeat (timeout, HTTP 429/5xx, ...): never recorded."""

    def add(self, outcome: str) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)

    def as_metrics(self) -> dict[str, float]:
        """``tool_cache_<count>`` for the ``accounting`` score."""
        return {f"tool_cache_{f.name}": float(getattr(self, f.name)) for f in fields(self)}


COUNT_KEYS = tuple(f"tool_cache_{f.name}" for f in fields(CacheCounts))
SAMPLE_COUNTS: ContextVar[CacheCounts | None] = ContextVar("tool_cache_sample_counts", default=None)


@contextlib.contextmanager
def counting() -> Iterator[CacheCounts]:
    """Counts of the cached tool calls made inside this block (one sample's run; child tasks included)."""
    counts = CacheCounts()
    token = SAMPLE_COUNTS.set(counts)
    try:
        yield counts
    finally:
        SAMPLE_COUNTS.reset(token)
