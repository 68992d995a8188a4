"""A bounded record of batch sizes, so a provider serving requests for days keeps constant memory."""

from __future__ import annotations

RECENT = 4096
"""How many of the latest sizes a ``RecentSizes`` keeps at least."""


class RecentSizes(list[int]):
    """A list of the latest sizes (batch or decode-step sizes, for tests and benchmarks): once it holds twice
    ``keep`` entries, the oldest are dropped down to ``keep`` (amortised O(1) per append)."""

    def __init__(self, keep: int = RECENT):
        super().__init__()
        self.keep = keep

    def append(self, size: int) -> None:
        super().append(size)
        if len(self) >= 2 * self.keep:
            del self[: -self.keep]
