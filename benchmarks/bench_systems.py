"""Systems benchmarks: FFD packing quality on MARS-like tool outputs, and MARS episode latency with parallel System 1.

Run: ``.venv/bin/pytest benchmarks/bench_systems.py --benchmark-only -s``. Ratios are printed and stored in each
benchmark's ``extra_info``: bins / ceil(total / capacity) (target <= 1.05), the share of System-1 calls saved versus
one call per page, and episode wall time in units of one model latency (parallel System 1 ~ 3 for a tool turn plus an
answer turn, i.e. ~2 per tool turn; serial System 1 would cost 2 + bins).
"""

from __future__ import annotations

import asyncio
import json
import math
import random

import pytest

from harness.binpack import first_fit_decreasing
from harness.systems import mars
from harness.systems.types import Reply, Toolbox
from harness.tools.output import ToolText

PAGES_PER_CALL = 20
BUDGETS = (8192, 16384, 23552)


def mars_like_lengths(rng: random.Random) -> list[int]:
    """~20 pages of 0.5k-8k tokens, skewed towards short pages (log-uniform), as a web search call returns."""
    return [int(math.exp(rng.uniform(math.log(500), math.log(8000)))) for _ in range(PAGES_PER_CALL)]


@pytest.mark.parametrize("capacity", BUDGETS)
def test_ffd_bins_vs_lower_bound(benchmark, capacity):
    rng = random.Random(capacity)
    calls = [mars_like_lengths(rng) for _ in range(200)]
    benchmark(lambda: [first_fit_decreasing(lengths, capacity) for lengths in calls])
    ratios, saved = [], []
    for lengths in calls:
        bins = len(first_fit_decreasing(lengths, capacity))
        ratios.append(bins / math.ceil(sum(lengths) / capacity))
        saved.append(1 - bins / len(lengths))
    benchmark.extra_info.update(
        {
            "mean_bins_over_lower_bound": sum(ratios) / len(ratios),
            "max_bins_over_lower_bound": max(ratios),
            "system1_calls_saved_vs_per_page": sum(saved) / len(saved),
        }
    )
    print(f"\ncapacity {capacity}: {benchmark.extra_info}")
    assert sum(ratios) / len(ratios) <= 1.05


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

    result = benchmark.pedantic(episode, rounds=5, iterations=1)
    bins = len(result.calls_by_role(mars.SYSTEM1))
    benchmark.extra_info.update(
        {
            "system1_bins": bins,
            "episode_latencies_best_round": benchmark.stats.stats.min / latency,
            "serial_system1_latencies": 2 + bins,
        }
    )
    print(f"\nMARS episode: {benchmark.extra_info}")
    assert bins > 1
