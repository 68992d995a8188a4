"""Leaderboard throughput: ingest and render 1,000 synthetic Inspect logs × 500 samples; time and peak memory.

Logs are written once with Inspect's log API (``write_eval_log``) into a cache folder (reused by later runs) by a
child process, so this process's peak RSS measures ingestion and rendering only. Baseline, in the same process:
reading the same logs' headers and sample summaries with Inspect itself (the parse every ingester must pay), so
``ingest / read`` is the overhead of hashing, flattening and storing. Sizes: ``MARA_BENCH_LOGS`` (default 1000),
``MARA_BENCH_SAMPLES`` (default 500).

    OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_leaderboards.py -q -s
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    read_eval_log,
    read_eval_log_sample_summaries,
    write_eval_log,
)
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score

from leaderboards.compare import nightly_comparisons
from leaderboards.site import render_site
from leaderboards.store import HistoryStore, SampleRow

LOGS = int(os.environ.get("MARA_BENCH_LOGS", "1000"))
SAMPLES = int(os.environ.get("MARA_BENCH_SAMPLES", "500"))
CHECKPOINTS, TASKS = 10, 10  # 1,000 logs = 10 checkpoints x 10 tasks x 10 nights


def _synthetic_log(index: int) -> EvalLog:
    checkpoint, task, night = (
        index % CHECKPOINTS,
        (index // CHECKPOINTS) % TASKS,
        index // (CHECKPOINTS * TASKS),
    )
    accuracy_permille = 400 + 30 * checkpoint + night
    samples = [
        EvalSample(
            id=f"{task}-{i}",
            epoch=1,
            input=f"question {i} of task {task}",
            target=str(i),
            output=ModelOutput.from_content(model="m", content=f"answer {i}"),
            scores={
                "accuracy": Score(
                    value="C" if (i * 7919 + index) % 1000 < accuracy_permille else "I",
                    answer=f"<b>answer</b> {i}",
                )
            },
        )
        for i in range(SAMPLES)
    ]
    value = sum(s.scores["accuracy"].value == "C" for s in samples) / SAMPLES
    return EvalLog(
        eval=EvalSpec(
            created=f"2026-01-{1 + night:02d}T02:00:00+00:00",
            task=f"task{task}",
            model=f"local/ckpt{checkpoint}",
            dataset=EvalDataset(name=f"task{task}", samples=SAMPLES),
            config=EvalConfig(),
            task_args={"system": "direct", "protocol": "quick"},
            metadata={
                "checkpoint": f"ckpt{checkpoint}",
                "night": f"2026-01-{1 + night:02d}",
                "leaderboard_suite": "bench",
            },
        ),
        plan=EvalPlan(),
        results=EvalResults(
            total_samples=SAMPLES,
            completed_samples=SAMPLES,
            scores=[
                EvalScore(
                    name="accuracy",
                    scorer="accuracy",
                    metrics={
                        "accuracy": EvalMetric(name="accuracy", value=value),
                        "stderr": EvalMetric(
                            name="stderr", value=(value * (1 - value) / (SAMPLES - 1)) ** 0.5
                        ),
                    },
                )
            ],
        ),
        samples=samples,
        status="success",
    )


def _write_logs(folder: str, start: int, stop: int) -> None:
    for index in range(start, stop):
        write_eval_log(
            _synthetic_log(index), str(Path(folder) / f"2026-01-01T00-00-00_task_{index:05d}.eval")
        )


def synthetic_logs() -> Path:
    folder = Path(tempfile.gettempdir()) / f"mara-bench-leaderboard-logs-{LOGS}x{SAMPLES}"
    if len(list(folder.glob("*.eval"))) != LOGS:
        folder.mkdir(exist_ok=True)
        context = multiprocessing.get_context("spawn")
        workers = max(1, min(2, os.cpu_count() or 1))
        bounds = [(LOGS * w // workers, LOGS * (w + 1) // workers) for w in range(workers)]
        with context.Pool(workers) as pool:
            pool.starmap(_write_logs, [(str(folder), a, b) for a, b in bounds])
    return folder


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_ingest_and_render_synthetic_logs(benchmark, tmp_path):
    logs = synthetic_logs()
    paths = sorted(str(p) for p in logs.glob("*.eval"))

    started = time.perf_counter()
    for path in paths:
        read_eval_log(path, header_only=True)
        read_eval_log_sample_summaries(path)
    read_seconds = time.perf_counter() - started
    rss_before = _peak_rss_mib()

    timings: dict[str, float] = {}

    last_night = (LOGS - 1) // (CHECKPOINTS * TASKS)
    night = f"2026-01-{1 + last_night:02d}"
    expected_comparisons = LOGS - last_night * CHECKPOINTS * TASKS if last_night else 0

    def ingest_and_render() -> None:
        store = HistoryStore(str(tmp_path / f"history-{time.monotonic_ns()}.sqlite"))
        started = time.perf_counter()
        report = store.ingest(str(logs))
        timings["ingest"] = time.perf_counter() - started
        started = time.perf_counter()
        comparisons = nightly_comparisons(store, night)
        timings["compare"] = time.perf_counter() - started
        started = time.perf_counter()
        render_site(store, tmp_path / "site", night, comparisons)
        timings["render"] = time.perf_counter() - started
        assert len(report.added) == LOGS and store.count(SampleRow) == LOGS * SAMPLES
        assert len(comparisons) == expected_comparisons
        store.close()

    benchmark.pedantic(ingest_and_render, rounds=1, iterations=1)
    benchmark.extra_info.update(
        logs=LOGS,
        samples=SAMPLES,
        inspect_read_s=round(read_seconds, 2),
        **{f"{k}_s": round(v, 2) for k, v in timings.items()},
        ingest_over_read=round(timings["ingest"] / read_seconds, 2),
        peak_rss_mib=round(_peak_rss_mib(), 1),
        peak_rss_before_mib=round(rss_before, 1),
    )
    print("\n", benchmark.extra_info)
