"""The request batcher: size and wait-window triggers, result order, errors reach every request of a batch;
the bounded record of batch sizes."""

from __future__ import annotations

import asyncio
import threading

import pytest

from mara_bench.harness.providers.batching import RequestBatcher
from mara_bench.harness.providers.trace import RecentSizes


def doubler(calls: list[list[int]]):
    def run(requests: list[int]) -> list[int]:
        calls.append(list(requests))
        return [2 * r for r in requests]

    return run


async def test_concurrent_requests_fill_batches_of_the_configured_size():
    calls: list[list[int]] = []
    batcher = RequestBatcher(doubler(calls), batch_size=4, wait_ms=1000)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(10)))
    assert results == [2 * i for i in range(10)]
    # 4 and 4 fill up at once; the last 2 go when the oldest has waited the window
    assert calls == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batcher.batch_sizes == [4, 4, 2]


async def test_a_lone_request_goes_after_the_wait_window():
    calls: list[list[int]] = []
    batcher = RequestBatcher(doubler(calls), batch_size=8, wait_ms=5)
    assert await batcher.submit(21) == 42
    assert calls == [[21]]


async def test_requests_arriving_during_a_batch_form_the_next_batch():
    started, release = threading.Event(), threading.Event()
    calls: list[list[int]] = []

    def slow(requests: list[int]) -> list[int]:
        calls.append(list(requests))
        started.set()
        release.wait(5)
        return requests

    batcher = RequestBatcher(slow, batch_size=8, wait_ms=0)
    first = asyncio.ensure_future(batcher.submit(0))
    await asyncio.to_thread(started.wait, 5)
    later = [asyncio.ensure_future(batcher.submit(i)) for i in (1, 2, 3)]
    await asyncio.sleep(0.01)
    release.set()
    assert await asyncio.gather(first, *later) == [0, 1, 2, 3]
    assert calls == [[0], [1, 2, 3]]


async def test_a_failing_batch_raises_to_each_of_its_requests_and_the_batcher_recovers():
    def fail_on_negative(requests: list[int]) -> list[int]:
        if any(r < 0 for r in requests):
            raise RuntimeError("bad batch")
        return requests

    batcher = RequestBatcher(fail_on_negative, batch_size=2, wait_ms=1000)
    results = await asyncio.gather(batcher.submit(-1), batcher.submit(5), return_exceptions=True)
    assert [str(r) for r in results] == ["bad batch", "bad batch"]
    assert await asyncio.gather(batcher.submit(3), batcher.submit(4)) == [3, 4]


def test_the_batcher_works_across_event_loops():
    calls: list[list[int]] = []
    batcher = RequestBatcher(doubler(calls), batch_size=2, wait_ms=1)

    async def two() -> list[int]:
        return list(await asyncio.gather(batcher.submit(1), batcher.submit(2)))

    assert asyncio.run(two()) == [2, 4]
    assert asyncio.run(two()) == [2, 4]


@pytest.mark.parametrize(
    ("size", "wait", "message"), [(0, 1, "batch_size must be at least 1"), (1, -1, "batch_wait_ms")]
)
def test_bad_settings_are_clear_errors(size, wait, message):
    with pytest.raises(ValueError, match=message):
        RequestBatcher(lambda r: r, batch_size=size, wait_ms=wait)


def test_the_size_record_keeps_the_latest_entries_only():
    sizes = RecentSizes(keep=3)
    for size in range(1, 6):
        sizes.append(size)
    assert sizes == [1, 2, 3, 4, 5]  # under 2 x keep: everything
    sizes.append(6)
    assert sizes == [4, 5, 6]  # at 2 x keep: down to the latest 3
    sizes.append(7)
    assert sizes == [4, 5, 6, 7] and sizes[-2:] == [6, 7]
