"""Leaderboard throughput: ingest and render synthetic Inspect logs; time and peak memory.

The logs are written with Inspect's own log API (``write_eval_log``), no evals run: one template log per task,
whose score values, model and night are set per log before writing. Two child processes write them into a cache
folder that later runs reuse; this process's peak RSS therefore measures ingestion and rendering only. Inspect's
writer creates a 12-thread zstd compressor for every sample it stores (about 1.5 ms each); the writer processes
use single-threaded zstd instead (same file format, ~0.2 s per 500-sample log).

Baseline: reading the same logs' headers and sample summaries with Inspect itself (the parse every ingester must
pay), in ``ROUNDS`` interleaved pairs with ingest + compare + render into a fresh store (``benchmarks/_pairs.py``),
so ``ingest / read`` (min/median/max over the pairs) is the overhead of hashing, flattening and storing.

Sizes: 200 logs x 100 samples by default, so that ``pytest benchmarks`` finishes in minutes; the nightly scale,
1,000 logs x 500 samples (about two minutes to write on two cores, then minutes per round), with
``MARA_BENCH_FULL=1``; ``MARA_BENCH_LOGS`` / ``MARA_BENCH_SAMPLES`` set either size.

    OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_leaderboards.py --benchmark-only -q -s
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import inspect_ai._util.zipfile as zipfile_settings
from _pairs import interleaved_pairs, ratio_spread
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

from mara_bench.leaderboards.collect import file_hash, list_logs
from mara_bench.leaderboards.compare import nightly_comparisons
from mara_bench.leaderboards.site import render_site
from mara_bench.leaderboards.store import HistoryStore, SampleRow

FULL = os.environ.get("MARA_BENCH_FULL") == "1"
LOGS = int(os.environ.get("MARA_BENCH_LOGS", "1000" if FULL else "200"))
SAMPLES = int(os.environ.get("MARA_BENCH_SAMPLES", "500" if FULL else "100"))
ROUNDS = 1 if FULL else 3
CHECKPOINTS, TASKS = 10, 10  # 1,000 logs = 10 checkpoints x 10 tasks x 10 nights


@functools.cache
def _template(task: int) -> EvalLog:
    """A finished log of ``task`` with SAMPLES scored samples; :func:`_synthetic_log` fills in one run."""
    samples = [
        EvalSample(
            id=f"{task}-{i}",
            epoch=1,
            input=f"question {i} of task {task}",
            target=str(i),
            output=ModelOutput.from_content(model="m", content=f"answer {i}"),
            scores={"accuracy": Score(value="I", answer=f"<b>answer</b> {i}")},
        )
        for i in range(SAMPLES)
    ]
    return EvalLog(
        eval=EvalSpec(
            created="2026-01-01T02:00:00+00:00",
            task=f"task{task}",
            model="local/ckpt0",
            dataset=EvalDataset(name=f"task{task}", samples=SAMPLES),
            config=EvalConfig(),
            task_args={"system": "direct", "protocol": "quick"},
            metadata={"leaderboard_suite": "bench"},
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
                        "accuracy": EvalMetric(name="accuracy", value=0.0),
                        "stderr": EvalMetric(name="stderr", value=0.0),
                    },
                )
            ],
        ),
        samples=samples,
        status="success",
    )


def _synthetic_log(index: int) -> EvalLog:
    """Log ``index``: checkpoint ``index % 10`` on task ``index // 10 % 10`` in night ``index // 100``; its accuracy
    rises with the checkpoint and the night, and each sample's result is a fixed pseudo-random draw."""
    checkpoint, task, night = (
        index % CHECKPOINTS,
        (index // CHECKPOINTS) % TASKS,
        index // (CHECKPOINTS * TASKS),
    )
    log = _template(task)
    accuracy_permille = 400 + 30 * checkpoint + night
    for i, sample in enumerate(log.samples):
        sample.scores["accuracy"].value = "C" if (i * 7919 + index) % 1000 < accuracy_permille else "I"
    value = sum(s.scores["accuracy"].value == "C" for s in log.samples) / SAMPLES
    date = f"2026-01-{1 + night:02d}"
    log.eval.created = f"{date}T02:00:00+00:00"
    log.eval.model = f"local/ckpt{checkpoint}"
    log.eval.metadata = {"checkpoint": f"ckpt{checkpoint}", "night": date, "leaderboard_suite": "bench"}
    metrics = log.results.scores[0].metrics
    metrics["accuracy"].value = value
    metrics["stderr"].value = (value * (1 - value) / (SAMPLES - 1)) ** 0.5
    return log


def _write_logs(folder: str, start: int, stop: int) -> None:
    zipfile_settings._ZSTD_THREADS = 0  # single-threaded zstd: see the module docstring
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
    started = time.perf_counter()
    logs = synthetic_logs()
    write_seconds = time.perf_counter() - started  # about 0 when the cache folder was already complete
    paths = sorted(str(p) for p in logs.glob("*.eval"))

    def read() -> float:
        started = time.perf_counter()
        for path in paths:
            read_eval_log(path, header_only=True)
            read_eval_log_sample_summaries(path)
        return time.perf_counter() - started

    last_night = (LOGS - 1) // (CHECKPOINTS * TASKS)
    night = f"2026-01-{1 + last_night:02d}"
    expected_comparisons = LOGS - last_night * CHECKPOINTS * TASKS if last_night else 0
    rss_before = _peak_rss_mib()

    def ingest_and_render() -> dict[str, float]:
        timings = {}
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
        return timings

    pairs = benchmark.pedantic(
        interleaved_pairs, args=(ingest_and_render, read, ROUNDS), rounds=1, iterations=1
    )
    ratio = ratio_spread(pairs, lambda p: p.ours["ingest"] / p.baseline)
    benchmark.extra_info.update(
        logs=LOGS,
        samples=SAMPLES,
        write_logs_s=round(write_seconds, 2),
        inspect_read_s=round(statistics.median(p.baseline for p in pairs), 2),
        **{f"{k}_s": round(statistics.median(p.ours[k] for p in pairs), 2) for k in pairs[0].ours},
        ingest_over_read=ratio.as_dict(),
        peak_rss_mib=round(_peak_rss_mib(), 1),
        peak_rss_before_mib=round(rss_before, 1),
    )
    print(f"\n{LOGS} logs x {SAMPLES} samples, {ROUNDS} pairs; ingest/read min/median/max {ratio}")
    print(benchmark.extra_info)


def test_a_second_ingest_does_not_rehash_stored_logs(benchmark, tmp_path):
    """A nightly ingests its whole ``logs/`` folder every night: the pass over logs already stored, against what it
    cost before (hashing every file), CPU seconds in interleaved pairs."""
    logs = synthetic_logs()
    store = HistoryStore(str(tmp_path / "history.sqlite"))
    store.ingest(str(logs))
    paths = list_logs(str(logs))

    def again() -> float:
        started = time.process_time()
        report = store.ingest(str(logs))
        assert len(report.already_present) == LOGS
        return time.process_time() - started

    def rehash_every_log() -> float:  # the pass as it was: list, hash every file, look the hash up
        started = time.process_time()
        for path in list_logs(str(logs)):
            store.has_log(file_hash(path))
        return time.process_time() - started

    pairs = benchmark.pedantic(
        interleaved_pairs, args=(again, rehash_every_log, ROUNDS), rounds=1, iterations=1
    )
    ratio = ratio_spread(pairs, lambda p: p.ours / p.baseline)
    megabytes = sum(Path(p.removeprefix("file://")).stat().st_size for p in paths) / 2**20
    store.close()
    benchmark.extra_info.update(
        logs=LOGS, megabytes=round(megabytes, 1), second_ingest_over_rehash=ratio.as_dict()
    )
    print(
        f"\n{LOGS} logs ({megabytes:.1f} MiB), {ROUNDS} pairs; second ingest / re-hash CPU min/median/max {ratio}"
    )
