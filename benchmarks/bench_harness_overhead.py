"""Per-sample harness cost: ``aime2025 -T system=direct`` vs a plain Inspect task (generate() + match()).

Both evaluate the same samples on the same scripted mock model in this process, in ``ROUNDS`` interleaved pairs
(``benchmarks/_pairs.py``); the per-pair ratio of per-sample times, min/median/max, is the harness overhead (target <=
1.1). The model gets the same input on both sides: the harness sends the benchmark's answer-format instruction as a
system message before the question, so each plain sample's input is that system message and the question (as a message
list, with no extra solver); comparing against the question alone would count a longer model input, which Inspect logs
in every model event, as harness cost. Each side is timed twice: wall clock, and this process's CPU time
(``time.process_time``), which another engineer's job on a shared machine slows far less than the wall clock. The CPU
time is also split (``resource.getrusage``; printed, not compared): user and system time, the calling thread (the event
loop's) against Inspect's other threads, and minor page faults per sample, which tell Python work from system calls
(the sample buffer's SQLite writes, the log), another thread's work or memory. Faults well above ~21 per sample on
either side are CPython 3.11 mapping and unmapping a 16 KiB frame-stack chunk each time the call stack crosses a chunk
boundary: it depends on how deep the caller's stack is (pytest's is deeper than a script's), not on the harness alone. A
garbage collection runs before each side so neither pays for the other's garbage, and one untimed run of each side
warms imports and caches first (and shows that the model was sent the same messages on both sides). The harness time
includes building the task (loading and hashing the data file). The ratios are reported in ``extra_info`` and printed,
never asserted. Run: ``.venv/bin/pytest benchmarks/bench_harness_overhead.py --benchmark-only -s``;
``MARA_BENCH_FULL=1`` measures 400 samples x 9 pairs instead of 150 x 5.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from _pairs import interleaved_pairs, ratio_spread
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import match
from inspect_ai.solver import generate

from mara_bench.catalog import get_benchmark
from mara_bench.harness.datasets.specs import INSTRUCTION_KEY
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.testing import scripted_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")
FULL = os.environ.get("MARA_BENCH_FULL") == "1"
SAMPLES = 400 if FULL else 150
ROUNDS = 9 if FULL else 5
REPLY = "The bases are 21 and 49, so the sum is \\boxed{70}."


@dataclass(frozen=True)
class Usage:
    """This process's clocks and counters: wall clock and CPU time in seconds, the CPU time's user and system parts,
    the calling thread's CPU time (the rest is Inspect's other threads) and minor page faults. Read at one moment
    (``now``), or per sample of one eval (``per_sample``)."""

    wall: float
    cpu: float
    user: float
    system: float
    calling_thread: float
    minor_faults: float

    @classmethod
    def now(cls) -> Usage:
        process, thread = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_THREAD)
        return cls(
            wall=time.perf_counter(),
            cpu=time.process_time(),
            user=process.ru_utime,
            system=process.ru_stime,
            calling_thread=thread.ru_utime + thread.ru_stime,
            minor_faults=process.ru_minflt,
        )

    def per_sample(self, start: Usage, samples: int) -> Usage:
        """The change from ``start`` to this reading, per sample."""
        return Usage(
            **{f.name: (getattr(self, f.name) - getattr(start, f.name)) / samples for f in fields(self)}
        )


def aime_file(directory: Path, samples: int = SAMPLES) -> Path:
    """An AIME-format data file of ``samples`` questions, all answered by ``REPLY``."""
    path = directory / "aime_bench.jsonl"
    rows = [{"problem": f"Problem {i}: find the sum of the bases.", "answer": "70"} for i in range(samples)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def harness_task(data: Path) -> Task:
    """The harness side: ``aime2025 -T system=direct`` on ``data``."""
    return evaluation_task(get_benchmark("aime2025"), system="direct", data=str(data))


def plain_samples(data: Path) -> list[Sample]:
    """The same questions as plain Inspect samples whose input is the harness's messages (system, then user)."""
    return [
        Sample(
            id=s.id,
            input=[ChatMessageSystem(content=s.metadata[INSTRUCTION_KEY]), ChatMessageUser(content=s.input)],
            target=s.target,
        )
        for s in harness_task(data).dataset
    ]


def plain_task(samples: list[Sample]) -> Task:
    """The plain side: generate() + match() on ``plain_samples``."""
    return Task(dataset=MemoryDataset(samples), solver=generate(), scorer=match(location="any"))


def run_eval(build_task, log_dir: Path, **eval_options: Any) -> EvalLog:
    """One in-process eval of ``build_task()`` on the scripted model (``eval_options`` go to ``eval``; no display
    unless they name one)."""
    options = {"display": "none", **eval_options}
    (log,) = eval(
        build_task(), model=scripted_model(lambda messages, config: REPLY), log_dir=str(log_dir), **options
    )
    assert log.status == "success", log.error
    return log


def _run(build_task, log_dir: Path) -> Usage:
    """Per-sample usage of one in-process eval of ``build_task()`` (building the task included)."""
    gc.collect()
    start = Usage.now()
    run_eval(build_task, log_dir)
    return Usage.now().per_sample(start, SAMPLES)


def _model_inputs(log: EvalLog) -> list[list[tuple[str, str]]]:
    """(role, text) of every message the model was sent, per sample."""
    return [
        [
            (message.role, message.text)
            for event in sample.events
            if isinstance(event, ModelEvent)
            for message in event.input
        ]
        for sample in log.samples
    ]


def test_harness_overhead_vs_plain_task(benchmark, tmp_path):
    data = aime_file(tmp_path)
    samples = plain_samples(data)

    def ours() -> Usage:
        return _run(lambda: harness_task(data), tmp_path / "harness")

    def baseline() -> Usage:
        return _run(lambda: plain_task(samples), tmp_path / "plain")

    warm_ours = run_eval(lambda: harness_task(data), tmp_path / "harness")
    warm_plain = run_eval(lambda: plain_task(samples), tmp_path / "plain")
    assert _model_inputs(warm_ours) == _model_inputs(warm_plain)  # the same work for the model on both sides
    pairs = benchmark.pedantic(interleaved_pairs, args=(ours, baseline, ROUNDS), rounds=1, iterations=1)
    wall = ratio_spread(pairs, lambda p: p.ours.wall / p.baseline.wall)
    cpu = ratio_spread(pairs, lambda p: p.ours.cpu / p.baseline.cpu)
    parts = {
        side: {
            f.name: statistics.median(getattr(getattr(p, side), f.name) for p in pairs) for f in fields(Usage)
        }
        for side in ("ours", "baseline")
    }
    medians = {
        f"{side}_{clock}_ms_per_sample": 1e3 * parts[side][clock]
        for side in ("ours", "baseline")
        for clock in ("wall", "cpu")
    }
    benchmark.extra_info.update(
        medians,
        harness_over_plain_wall=wall.as_dict(),
        harness_over_plain_cpu=cpu.as_dict(),
        median_usage_per_sample=parts,
        target=1.1,
    )
    print(
        f"\n{SAMPLES} samples, {ROUNDS} pairs; per-sample medians, plain: wall "
        f"{medians['baseline_wall_ms_per_sample']:.2f} ms, CPU {medians['baseline_cpu_ms_per_sample']:.2f} ms; "
        f"harness: wall {medians['ours_wall_ms_per_sample']:.2f} ms, CPU {medians['ours_cpu_ms_per_sample']:.2f} ms"
        f"\nharness/plain min/median/max: wall {wall}, CPU {cpu} (target <= 1.1)"
    )
    for side, name in (("baseline", "plain"), ("ours", "harness")):
        usage = parts[side]
        print(
            f"{name} per sample (medians): user {1e3 * usage['user']:.2f} ms, system {1e3 * usage['system']:.2f} ms, "
            f"event-loop thread {1e3 * usage['calling_thread']:.2f} ms, other threads "
            f"{1e3 * (usage['cpu'] - usage['calling_thread']):.2f} ms, minor page faults {usage['minor_faults']:.1f}"
        )
