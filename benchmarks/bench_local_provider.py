"""Throughput of the ``local/`` provider on the tiny model: batched vs one-request-at-a-time, 1/8/32 concurrent.

Each case sends N concurrent greedy requests (48 new tokens each) through ``get_model("local/...")``, in bursts
of N until ``BURST_REQUESTS`` requests have gone (at least one burst). The baseline is the same provider with
``batch_size=1`` (sequential generation: unbatched, no wait window) in the same process. ``ROUNDS`` interleaved
pairs (``benchmarks/_pairs.py``) give per-pair ratios batched / sequential of output tokens per wall-clock second
and per CPU second of the process, reported min/median/max in ``extra_info`` and printed, never asserted
(targets: >= 1 at one request -- single-request latency no worse than unbatched -- and >= 3 at 8 concurrent).
What the process holds after the warm-up is frozen out of garbage collection (``gc.freeze``): without that, two
runs each had one 32-concurrent pair at 2.2x, CPU time included, against a median of 12-13x. With vLLM and a CUDA
GPU present the vLLM backend is measured too (tokens/s).

Staggered arrivals (``test_continuous_vs_static_on_staggered_arrivals``): 16 greedy requests with mixed
``max_tokens`` (8..64) arriving one every ``ARRIVAL_GAP_S``, like the calls of a multi-agent system, served by
``-M scheduler=continuous`` and by ``-M scheduler=static`` (same batch size and wait window), in interleaved
pairs: ratios continuous/static of total output tokens/s (first arrival to last reply) and static/continuous of
the mean per-request latency (arrival to reply).

``test_transformers_continuous_batching`` (only with ``MARA_BENCH_TRANSFORMERS_CB=1``: on a CPU each call takes
tens of seconds) times transformers' own continuous batching (``generate_batch``) against ours (``generate``) on
the same 8 and 32 greedy prompts. Run:
``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_local_provider.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import os
import statistics
import time

import pytest
import torch
from _pairs import Spread, interleaved_pairs, ratio_spread
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

from mara_bench.harness.tinymodel import build_tiny_model

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


def tokens_per_second(model, concurrent: int, loop: asyncio.AbstractEventLoop, bursts: int = 1) -> float:
    """Generate ``concurrent`` requests at once, ``bursts`` times in a row; output tokens per wall-clock second."""
    return burst_rates(model, concurrent, loop, bursts)["wall"]


def burst_rates(model, concurrent: int, loop: asyncio.AbstractEventLoop, bursts: int = 1) -> dict[str, float]:
    """``tokens_per_second``'s bursts: output tokens per wall-clock second and per CPU second of the process (the
    decode thread included; a preempted side loses wall time, not CPU time)."""

    async def burst() -> int:
        prompts = [[ChatMessageUser(content=f"Question {i}: what is {i} + {i}?")] for i in range(concurrent)]
        outputs = await asyncio.gather(*(model.generate(p, config=CONFIG) for p in prompts))
        return sum(o.usage.output_tokens for o in outputs)

    wall, cpu = time.perf_counter(), time.process_time()
    tokens = sum(loop.run_until_complete(burst()) for _ in range(bursts))
    return {"wall": tokens / (time.perf_counter() - wall), "cpu": tokens / (time.process_time() - cpu)}


ROUNDS = 5
BURST_REQUESTS = 8
"""Requests one measurement sends (in bursts of ``concurrent``): a lone 48-token request takes tens of milliseconds,
a share of which one preemption on a loaded machine can take."""


@pytest.mark.parametrize("concurrent", [1, 8, 32])
def test_batched_vs_sequential_throughput(benchmark, tiny, loop, concurrent):
    sequential = get_model(f"local/{tiny}", batch_size=1, batch_wait_ms=0, backend="hf", memoize=False)
    batched = get_model(f"local/{tiny}", batch_size=32, batch_wait_ms=10, backend="hf", memoize=False)
    # warm-up: the two are separate loads (their batch settings differ); the batched one at the measured width
    tokens_per_second(sequential, 2, loop)
    tokens_per_second(batched, max(2, concurrent), loop)
    gc.collect()
    gc.freeze()  # what the process holds so far is never scanned again: no side pays a collection of it
    bursts = max(1, BURST_REQUESTS // concurrent)
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: burst_rates(batched, concurrent, loop, bursts),
            lambda: burst_rates(sequential, concurrent, loop, bursts),
            ROUNDS,
        ),
        rounds=1,
        iterations=1,
    )
    gc.unfreeze()
    ratio = ratio_spread(pairs, lambda p: p.ours["wall"] / p.baseline["wall"])
    cpu_ratio = ratio_spread(pairs, lambda p: p.ours["cpu"] / p.baseline["cpu"])
    sequential_rate = statistics.median(p.baseline["wall"] for p in pairs)
    batched_rate = statistics.median(p.ours["wall"] for p in pairs)
    benchmark.extra_info.update(
        concurrent=concurrent,
        sequential_tok_s=sequential_rate,
        batched_tok_s=batched_rate,
        batched_over_sequential=ratio.as_dict(),
        batched_over_sequential_cpu=cpu_ratio.as_dict(),
    )
    print(
        f"\n{concurrent:>2} concurrent x {bursts} bursts, {ROUNDS} pairs: medians sequential {sequential_rate:8.0f} "
        f"tok/s, batched {batched_rate:8.0f} tok/s; batched/sequential min/median/max wall {ratio}, "
        f"per CPU second {cpu_ratio}"
    )


MANY_CONCURRENT = 64
WIDTHS = (16, 32, 64)


def test_batch_size_under_many_concurrent_requests(benchmark, tiny, loop):
    """``MANY_CONCURRENT`` concurrent requests (``--max-connections 64``) served with ``-M batch_size`` of each of
    ``WIDTHS``: ratios of output tokens per wall-clock and per CPU second, each width against 16 (the former
    default), in interleaved rounds (16 and the other widths alternately first)."""
    models = {
        width: get_model(f"local/{tiny}", batch_size=width, batch_wait_ms=10, backend="hf", memoize=False)
        for width in WIDTHS
    }
    for model in models.values():
        tokens_per_second(model, MANY_CONCURRENT, loop)  # warm-up
    gc.collect()
    gc.freeze()

    def widths() -> dict[int, dict[str, float]]:
        return {width: burst_rates(models[width], MANY_CONCURRENT, loop) for width in WIDTHS[1:]}

    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(widths, lambda: burst_rates(models[WIDTHS[0]], MANY_CONCURRENT, loop), ROUNDS),
        rounds=1,
        iterations=1,
    )
    gc.unfreeze()
    report = {
        f"{width}_over_{WIDTHS[0]}": {
            clock: ratio_spread(pairs, lambda p, w=width, c=clock: p.ours[w][c] / p.baseline[c]).as_dict()
            for clock in ("wall", "cpu")
        }
        for width in WIDTHS[1:]
    }
    benchmark.extra_info.update(report)
    print(f"\n{MANY_CONCURRENT} concurrent, {ROUNDS} rounds, tokens/s ratios min/median/max: {report}")


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
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: staggered(models["continuous"], loop),
            lambda: staggered(models["static"], loop),
            ROUNDS,
        ),
        rounds=1,
        iterations=1,
    )
    throughput = ratio_spread(pairs, lambda p: p.ours[0] / p.baseline[0])
    latency = ratio_spread(pairs, lambda p: p.baseline[1] / p.ours[1])
    static_rate, static_latency = (statistics.median(p.baseline[i] for p in pairs) for i in (0, 1))
    rate, mean_latency = (statistics.median(p.ours[i] for p in pairs) for i in (0, 1))
    benchmark.extra_info.update(
        {
            "static_tok_s": static_rate,
            "continuous_tok_s": rate,
            "throughput_continuous_over_static": throughput.as_dict(),
            "static_mean_latency_s": static_latency,
            "continuous_mean_latency_s": mean_latency,
            "latency_static_over_continuous": latency.as_dict(),
        }
    )
    print(
        f"\nstaggered x{ARRIVALS}, {ROUNDS} pairs, medians: static {static_rate:6.0f} tok/s, mean latency "
        f"{static_latency * 1000:5.0f} ms; continuous {rate:6.0f} tok/s, {mean_latency * 1000:5.0f} ms; "
        f"throughput continuous/static {throughput}, latency static/continuous {latency} (min/median/max)"
    )


@pytest.mark.skipif(
    os.environ.get("MARA_BENCH_TRANSFORMERS_CB") != "1",
    reason="set MARA_BENCH_TRANSFORMERS_CB=1 (slow on CPU)",
)
@pytest.mark.parametrize("concurrent", [8, 32])
def test_transformers_continuous_batching(benchmark, tiny, concurrent):
    """transformers' ``generate_batch`` vs our ``generate`` on the same greedy prompts, 2 interleaved pairs."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from mara_bench.harness.chat_template import render_prompt
    from mara_bench.harness.providers.generation import generate
    from mara_bench.harness.providers.sampling import Sampling

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny).eval(), AutoTokenizer.from_pretrained(tiny)
    prompts = [
        render_prompt(tokenizer, [{"role": "user", "content": f"Question {i}: what is {i} + {i}?"}])
        for i in range(concurrent)
    ]
    config = GenerationConfig(
        max_new_tokens=NEW_TOKENS,
        do_sample=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    outputs: dict = {}

    def theirs() -> float:
        started = time.perf_counter()
        outputs.update(model.generate_batch(prompts, generation_config=config))
        return time.perf_counter() - started

    def ours() -> float:
        started = time.perf_counter()
        outputs["ours"] = generate(model, tokenizer, prompts, Sampling(max_tokens=NEW_TOKENS, temperature=0))
        return time.perf_counter() - started

    pairs = benchmark.pedantic(interleaved_pairs, args=(ours, theirs, 2), rounds=1, iterations=1)
    speed = ratio_spread(pairs, lambda p: p.baseline / p.ours)
    same = sorted(o.generated_tokens for k, o in outputs.items() if k != "ours") == sorted(
        c.response_ids for c in outputs["ours"]
    )
    benchmark.extra_info.update(
        concurrent=concurrent, theirs_over_ours_seconds=speed.as_dict(), same_tokens=same
    )
    print(
        f"\n{concurrent} greedy prompts: transformers generate_batch / ours seconds min/median/max {speed}; "
        f"same tokens: {same}"
    )


@pytest.mark.gpu
@pytest.mark.skipif(not VLLM_READY, reason="needs vllm and a CUDA GPU")
@pytest.mark.parametrize("concurrent", [1, 8, 32])
def test_vllm_throughput(benchmark, tiny_for_gpu, loop, concurrent):
    model = get_model(f"local/{tiny_for_gpu}", backend="vllm", max_model_len=2048, memoize=False)
    tokens_per_second(model, 2, loop)  # starts the server (shared by the three cases)
    rates: list[float] = []
    benchmark.pedantic(
        lambda: rates.append(tokens_per_second(model, concurrent, loop)), rounds=ROUNDS, iterations=1
    )
    spread = Spread.of(rates)
    benchmark.extra_info.update({"concurrent": concurrent, "vllm_tok_s": spread.as_dict()})
    print(f"\n{concurrent:>2} concurrent: vLLM tok/s min/median/max {spread}")


TORCH_DEFAULT_THREADS = torch.get_num_threads()
"""Torch's own default (one per core), read before any ``local/`` model sets it."""


def test_one_cpu_thread_vs_torchs_default(benchmark, tiny, loop):
    """``-M threads`` default (1, ``CPU_THREADS``) against torch's default on the same model and 8 concurrent
    requests, in interleaved pairs: ratios of output tokens per wall second and per CPU second, 1 / default."""
    from mara_bench.harness.providers.transformers_api import CPU_THREADS

    model = get_model(f"local/{tiny}", backend="hf", device="cpu", memoize=False)
    tokens_per_second(model, 8, loop)

    def with_threads(count: int) -> dict[str, float]:
        torch.set_num_threads(count)  # what -M threads sets at load; process-wide, so set before each side
        return burst_rates(model, 8, loop, bursts=2)

    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(lambda: with_threads(CPU_THREADS), lambda: with_threads(TORCH_DEFAULT_THREADS), ROUNDS),
        rounds=1,
        iterations=1,
    )
    wall = ratio_spread(pairs, lambda p: p.ours["wall"] / p.baseline["wall"])
    cpu = ratio_spread(pairs, lambda p: p.ours["cpu"] / p.baseline["cpu"])
    benchmark.extra_info.update(
        threads=CPU_THREADS,
        torch_default=TORCH_DEFAULT_THREADS,
        wall_ratio=wall.as_dict(),
        cpu_ratio=cpu.as_dict(),
    )
    print(
        f"\nthreads {CPU_THREADS} vs torch default {TORCH_DEFAULT_THREADS}, {ROUNDS} pairs, 8 concurrent: "
        f"tokens per wall second min/median/max {wall}, per CPU second {cpu}"
    )
