"""Throughput of the ``local/`` provider on the tiny model: batched vs one-request-at-a-time, 1/8/32 concurrent.

Each case sends N concurrent greedy requests (48 new tokens each) through ``get_model("local/...")``. The baseline
is the same provider with ``batch_size=1`` (sequential generation) in the same process; the ratio of
their tokens/s is reported in ``extra_info`` and printed, never asserted (target >= 3x at 8 concurrent). With vLLM
and a CUDA GPU present the vLLM backend is measured too (tokens/s).

Staggered arrivals (``test_continuous_vs_static_on_staggered_arrivals``): 16 greedy requests with mixed
``max_tokens`` (8..64) arriving one every ``ARRIVAL_GAP_S``, like the calls of a multi-agent system, served by
``-M scheduler=continuous`` and by ``-M scheduler=static`` (same batch size and wait window). Reported as ratios
continuous/static of total output tokens/s (first arrival to last reply) and static/continuous of the mean
per-request latency (arrival to reply). Run:
``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_local_provider.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time

import pytest
import torch
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

from harness.tinymodel import build_tiny_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")
NEW_TOKENS = 48
CONFIG = GenerateConfig(max_tokens=NEW_TOKENS, temperature=0)
VLLM_READY = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("bench-tiny"))


@pytest.fixture(scope="module")
def tiny_for_gpu(tmp_path_factory):
    """The tiny model with 64-dimensional attention heads, a size every vLLM attention backend takes."""
    return build_tiny_model(tmp_path_factory.mktemp("bench-tiny-gpu"), hidden_size=256)


@pytest.fixture(scope="module")
def loop():
    """One event loop for every burst (a server-backed client stays bound to the loop it started on)."""
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


def tokens_per_second(model, concurrent: int, loop: asyncio.AbstractEventLoop) -> float:
    """Generate ``concurrent`` requests at once; output tokens per wall-clock second."""

    async def burst() -> int:
        prompts = [[ChatMessageUser(content=f"Question {i}: what is {i} + {i}?")] for i in range(concurrent)]
        outputs = await asyncio.gather(*(model.generate(p, config=CONFIG) for p in prompts))
        return sum(o.usage.output_tokens for o in outputs)

    start = time.perf_counter()
    tokens = loop.run_until_complete(burst())
    return tokens / (time.perf_counter() - start)


@pytest.mark.parametrize("concurrent", [1, 8, 32])
def test_batched_vs_sequential_throughput(benchmark, tiny, loop, concurrent):
    sequential = get_model(f"local/{tiny}", batch_size=1, batch_wait_ms=0, backend="hf", memoize=False)
    batched = get_model(f"local/{tiny}", batch_size=32, batch_wait_ms=10, backend="hf", memoize=False)
    tokens_per_second(
        sequential, 2, loop
    )  # warm-up: the two are separate loads (their batch settings differ)
    tokens_per_second(batched, 2, loop)
    baseline = max(tokens_per_second(sequential, concurrent, loop) for _ in range(3))
    rates: list[float] = []
    benchmark.pedantic(
        lambda: rates.append(tokens_per_second(batched, concurrent, loop)), rounds=3, iterations=1
    )
    ratio = max(rates) / baseline
    benchmark.extra_info.update(
        {"concurrent": concurrent, "sequential_tok_s": baseline, "batched_tok_s": max(rates), "ratio": ratio}
    )
    print(
        f"\n{concurrent:>2} concurrent: sequential {baseline:8.0f} tok/s, batched {max(rates):8.0f} tok/s, ratio {ratio:.1f}x"
    )


ARRIVALS = 16
ARRIVAL_GAP_S = 0.01
MIXED_MAX_TOKENS = (8, 64, 16, 40, 24, 56, 12, 32)


def staggered(model, loop: asyncio.AbstractEventLoop) -> tuple[float, float]:
    """Send ``ARRIVALS`` requests ``ARRIVAL_GAP_S`` apart; (output tokens/s, mean latency in seconds)."""

    async def call(i: int) -> tuple[int, float]:
        await asyncio.sleep(i * ARRIVAL_GAP_S)
        arrived = time.perf_counter()
        config = GenerateConfig(max_tokens=MIXED_MAX_TOKENS[i % len(MIXED_MAX_TOKENS)], temperature=0)
        output = await model.generate(
            [ChatMessageUser(content=f"Agent {i}: what is {i} * 7?")], config=config
        )
        return output.usage.output_tokens, time.perf_counter() - arrived

    async def run() -> list[tuple[int, float]]:
        return list(await asyncio.gather(*(call(i) for i in range(ARRIVALS))))

    start = time.perf_counter()
    results = loop.run_until_complete(run())
    elapsed = time.perf_counter() - start
    return sum(t for t, _ in results) / elapsed, sum(s for _, s in results) / len(results)


def test_continuous_vs_static_on_staggered_arrivals(benchmark, tiny, loop):
    models = {
        name: get_model(
            f"local/{tiny}", scheduler=name, batch_size=16, batch_wait_ms=10, backend="hf", memoize=False
        )
        for name in ("static", "continuous")
    }
    for model in models.values():
        staggered(model, loop)  # warm-up
    static = [staggered(models["static"], loop) for _ in range(3)]
    runs: list[tuple[float, float]] = []
    benchmark.pedantic(lambda: runs.append(staggered(models["continuous"], loop)), rounds=3, iterations=1)
    static_rate, static_latency = max(r for r, _ in static), min(s for _, s in static)
    rate, latency = max(r for r, _ in runs), min(s for _, s in runs)
    benchmark.extra_info.update(
        {
            "static_tok_s": static_rate,
            "continuous_tok_s": rate,
            "throughput_ratio": rate / static_rate,
            "static_mean_latency_s": static_latency,
            "continuous_mean_latency_s": latency,
            "latency_ratio": static_latency / latency,
        }
    )
    print(
        f"\nstaggered x{ARRIVALS}: static {static_rate:6.0f} tok/s, mean latency {static_latency * 1000:5.0f} ms; "
        f"continuous {rate:6.0f} tok/s, {latency * 1000:5.0f} ms; throughput {rate / static_rate:.2f}x, "
        f"latency {static_latency / latency:.2f}x lower"
    )


@pytest.mark.gpu
@pytest.mark.skipif(not VLLM_READY, reason="needs vllm and a CUDA GPU")
@pytest.mark.parametrize("concurrent", [1, 8, 32])
def test_vllm_throughput(benchmark, tiny_for_gpu, loop, concurrent):
    model = get_model(f"local/{tiny_for_gpu}", backend="vllm", max_model_len=2048, memoize=False)
    tokens_per_second(model, 2, loop)  # starts the server (shared by the three cases)
    rates: list[float] = []
    benchmark.pedantic(
        lambda: rates.append(tokens_per_second(model, concurrent, loop)), rounds=3, iterations=1
    )
    benchmark.extra_info.update({"concurrent": concurrent, "vllm_tok_s": max(rates)})
    print(f"\n{concurrent:>2} concurrent: vLLM {max(rates):8.0f} tok/s")
