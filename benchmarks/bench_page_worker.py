"""browse's page reading in a kept worker process (``mara_bench.harness.tools.page_worker``) vs the same ``read_page`` on the
event loop (how browse read pages before): the per-page latency it costs, and the longest stall of the event loop it
saves, on a typical article and on a large page.

Each round reads the page both ways back to back (order alternating, ``benchmarks._pairs``) while a ticker task
on the same loop records its longest gap; reported per pair as min / median / max, never asserted. Run:
``PYTHONPATH=. .venv/bin/pytest benchmarks/bench_page_worker.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable

import pytest
from _pairs import interleaved_pairs, ratio_spread

from mara_bench.harness.tools.page_text import read_page
from mara_bench.harness.tools.page_worker import Page, read_in_worker

ROUNDS = 6
PARAGRAPH = (
    "<p>Mount Everest is the highest mountain on Earth, 8,849 metres above sea level, in the Himalayas.</p>"
)
PAGES = {"article-100kB": 1000, "large-1MB": 10000}
"""Page name -> paragraphs (about 100 bytes each)."""


def _page(paragraphs: int) -> Page:
    html = f"<html><head><title>Everest</title></head><body><article>{PARAGRAPH * paragraphs}</article></body></html>"
    return Page("text/html", html.encode(), "utf-8", "https://example.org/everest", 20000)


async def _timed(read: Callable) -> tuple[float, float]:
    """``(seconds for the read, longest gap between ticks of a 1 ms ticker meanwhile)``."""
    gaps: list[float] = []

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.005)
    start = time.perf_counter()
    await read()
    elapsed = time.perf_counter() - start
    await asyncio.sleep(0.005)  # the ticker records the gap the read left
    ticker.cancel()
    return elapsed, max(gaps)


@pytest.mark.parametrize("page", PAGES)
def test_worker_vs_event_loop_page_reading(benchmark, page):
    fetched = _page(PAGES[page])

    async def in_worker() -> None:
        await read_in_worker(fetched, seconds=600)

    async def on_loop() -> None:
        read_page(fetched)

    asyncio.run(_timed(in_worker))  # start a worker (it imports the extraction stack once) outside the rounds
    pairs = benchmark.pedantic(
        lambda: interleaved_pairs(
            lambda: asyncio.run(_timed(in_worker)), lambda: asyncio.run(_timed(on_loop)), ROUNDS
        ),
        rounds=1,
        iterations=1,
    )
    latency = ratio_spread(pairs, lambda p: p.ours[0] / p.baseline[0])
    stall = ratio_spread(pairs, lambda p: p.baseline[1] / p.ours[1])
    summary = {
        "worker_median_ms": 1e3 * statistics.median(p.ours[0] for p in pairs),
        "loop_median_ms": 1e3 * statistics.median(p.baseline[0] for p in pairs),
        "worker_stall_median_ms": 1e3 * statistics.median(p.ours[1] for p in pairs),
        "loop_stall_median_ms": 1e3 * statistics.median(p.baseline[1] for p in pairs),
        "latency_ratio": latency.as_dict(),
        "stall_saved_ratio": stall.as_dict(),
    }
    benchmark.extra_info.update(summary)
    print(
        f"\n{page}: read {summary['loop_median_ms']:.0f} ms on the loop, {summary['worker_median_ms']:.0f} ms in "
        f"the worker (worker/loop per pair min/median/max {latency}); longest loop stall "
        f"{summary['loop_stall_median_ms']:.0f} ms -> {summary['worker_stall_median_ms']:.0f} ms "
        f"(loop/worker {stall})"
    )
