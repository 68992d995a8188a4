"""Systems benchmarks: FFD packing quality on MARS-like tool outputs, and MARS episode latency with parallel System 1.

Run: ``.venv/bin/pytest benchmarks/bench_systems.py --benchmark-only -s``. Ratios are printed and stored in each
benchmark's ``extra_info``: bins / ceil(total / capacity) (target <= 1.05 on average) and bins / the optimum found by
an exact search (which tells FFD's own excess from instances whose lower bound no packing reaches), the share of
System-1 calls saved versus one call per page, and episode wall time in units of one model latency and relative to
the ideal measured in the same process (a tool turn plus an answer turn with parallel System 1 is three latencies:
System 2, all System-1 bins at once, System 2; serial System 1 would cost 2 + bins).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time

import pytest

from mara_bench.core.episodes import Reply, Toolbox
from mara_bench.harness.binpack import first_fit_decreasing
from mara_bench.harness.systems import mars
from mara_bench.harness.toolbase.output import ToolText

PAGES_PER_CALL = 20
BUDGETS = (8192, 16384, 23552)


def mars_like_lengths(rng: random.Random) -> list[int]:
    """~20 pages of 0.5k-8k tokens, skewed towards short pages (log-uniform), as a web search call returns."""
    return [int(math.exp(rng.uniform(math.log(500), math.log(8000)))) for _ in range(PAGES_PER_CALL)]


def fits_in(lengths: list[int], capacity: int, bins: int) -> bool:
    """Whether the items fit in ``bins`` bins (exact depth-first search, longest item first, bins with equal free
    room tried once); fast for ~20 items in a handful of bins."""
    items = sorted(lengths, reverse=True)
    free = [capacity] * bins

    def place(index: int) -> bool:
        if index == len(items):
            return True
        tried = set()
        for b, room in enumerate(free):
            if room >= items[index] and room not in tried:
                tried.add(room)
                free[b] -= items[index]
                if place(index + 1):
                    return True
                free[b] += items[index]
        return False

    return place(0)


def optimal_bins(lengths: list[int], capacity: int, upper: int) -> int:
    """The fewest bins holding items no longer than ``capacity``, searched downwards from a feasible ``upper``."""
    lower = math.ceil(sum(lengths) / capacity)
    while upper > lower and fits_in(lengths, capacity, upper - 1):
        upper -= 1
    return upper


@pytest.mark.parametrize("capacity", BUDGETS)
def test_ffd_bins_vs_lower_bound(benchmark, capacity):
    rng = random.Random(capacity)
    calls = [mars_like_lengths(rng) for _ in range(200)]
    benchmark(lambda: [first_fit_decreasing(lengths, capacity) for lengths in calls])
    over_bound, over_optimum, saved, above_optimum, bound_unreachable = [], [], [], 0, 0
    for lengths in calls:
        bins = len(first_fit_decreasing(lengths, capacity))
        bound = math.ceil(sum(lengths) / capacity)
        optimum = optimal_bins(lengths, capacity, bins)
        over_bound.append(bins / bound)
        over_optimum.append(bins / optimum)
        above_optimum += bins > optimum
        bound_unreachable += optimum > bound
        saved.append(1 - bins / len(lengths))
    benchmark.extra_info.update(
        {
            "mean_bins_over_lower_bound": sum(over_bound) / len(over_bound),
            "max_bins_over_lower_bound": max(over_bound),
            "mean_bins_over_optimum": sum(over_optimum) / len(over_optimum),
            "max_bins_over_optimum": max(over_optimum),
            "calls_where_ffd_misses_the_optimum": above_optimum,
            "calls_where_no_packing_reaches_the_lower_bound": bound_unreachable,
            "system1_calls_saved_vs_per_page": sum(saved) / len(saved),
        }
    )
    print(f"\ncapacity {capacity}: {benchmark.extra_info}")
    assert sum(over_bound) / len(over_bound) <= 1.05


class FixedLatencyChat:
    """Every call takes ``latency`` seconds; System 2 makes one search call, then answers."""

    def __init__(self, latency: float):
        self.latency = latency

    async def __call__(self, role, messages, **sampling):
        await asyncio.sleep(self.latency)
        if role == mars.SYSTEM1:
            return Reply(text="distilled")
        if "<tool_response>" in messages[-1]["content"]:
            return Reply(text="<answer>done</answer>")
        call = {"name": "search", "arguments": {"query": "q"}, "purpose": "p"}
        return Reply(text=f"<tool_call>{json.dumps(call)}</tool_call>")


def test_mars_episode_latency_with_parallel_system1(benchmark):
    latency = 0.05
    rng = random.Random(0)
    pages = ["x" * (4 * length) for length in mars_like_lengths(rng)]

    async def search(query):
        return ToolText("\n\n".join(pages), pages)

    toolbox = Toolbox({"search": search})

    def episode():
        return asyncio.run(mars.run("q", FixedLatencyChat(latency), toolbox, sys1_budget=16384))

    async def three_latencies():
        for _ in range(3):
            await asyncio.sleep(latency)

    ideal = []
    for _ in range(5):
        started = time.perf_counter()
        asyncio.run(three_latencies())
        ideal.append(time.perf_counter() - started)

    result = benchmark.pedantic(episode, rounds=5, iterations=1)
    bins = len(result.calls_by_role(mars.SYSTEM1))
    benchmark.extra_info.update(
        {
            "system1_bins": bins,
            "episode_latencies_best_round": benchmark.stats.stats.min / latency,
            "episode_over_ideal_three_latencies_best_rounds": benchmark.stats.stats.min / min(ideal),
            "serial_system1_latencies": 2 + bins,
        }
    )
    print(f"\nMARS episode: {benchmark.extra_info}")
    assert bins > 1
