"""First-Fit-Decreasing bin packing of item lengths into fixed-capacity bins (MARS §3.2.1 / appendix C.2).

MARS packs a tool call's outputs (token counts) into System-1 context budgets; the trainer reuses the same function
to pack sequences into token-budget micro-batches.
"""

from __future__ import annotations

from collections.abc import Sequence

CLOSED = -1
"""The free room of an over-long item's bin: nothing joins it, not even an empty item (the caller truncates it)."""


def first_fit_decreasing(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Pack items into bins of ``capacity``; returns the item indices of each bin.

    Items are placed longest first into the first bin with room (ties keep input order). An item longer than
    ``capacity`` sits alone in its own bin (the caller truncates it). Bins come in the order they were opened;
    the indices inside a bin are in placement order.
    """
    if capacity <= 0:
        raise ValueError(f"bin capacity must be a positive number of tokens, got {capacity}")
    negative = [i for i, length in enumerate(lengths) if length < 0]
    if negative:
        raise ValueError(f"item lengths must be >= 0; items {negative} are negative")
    bins: list[list[int]] = []
    free: list[int] = []
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for index in order:
        length = lengths[index]
        if length > capacity:
            bins.append([index])
            free.append(CLOSED)
            continue
        target = next((b for b, room in enumerate(free) if room >= length), None)
        if target is None:
            bins.append([index])
            free.append(capacity - length)
        else:
            bins[target].append(index)
            free[target] -= length
    return bins
