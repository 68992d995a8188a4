"""Start-up tax of having mara-bench installed: ``inspect eval`` of a trivial task with vs without the entry point.

Inspect imports every installed ``inspect_ai`` entry point when it starts, whatever the task, so mara-bench's
entry point (``mara_bench.harness._registry``) is paid by every ``inspect eval``. Each round runs the same trivial task (no
model call) in a fresh interpreter twice, interleaved: once as installed, once with mara-bench's entry point
filtered out of ``importlib.metadata.entry_points``. Reported per pair: the wall-time difference (with - without)
and the ratio, min / median / max, the same for the CPU time (user + system), plus the memory (max RSS) difference;
never asserted. Run:
``.venv/bin/pytest benchmarks/bench_startup.py --benchmark-only -s`` (3 pairs; ``MARA_BENCH_FULL=1``: 7).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 7 if os.environ.get("MARA_BENCH_FULL") == "1" else 3
TASK = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import exact
from inspect_ai.solver import solver


@solver
def echo():
    async def solve(state, generate):
        state.output.completion = "4"
        return state

    return solve


@task
def trivial():
    return Task(dataset=[Sample(input="2+2?", target="4")], solver=echo(), scorer=exact())
"""
LAUNCH = """
import atexit, importlib.metadata, resource, sys
def report():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print("MAXRSS_KIB", usage.ru_maxrss, usage.ru_utime + usage.ru_stime, "mara_bench.harness._registry" in sys.modules, file=sys.stderr)
atexit.register(report)
if sys.argv.pop(1) == "without":
    everything = importlib.metadata.entry_points
    def entry_points(**selection):
        found = everything(**selection)
        if selection.get("group") != "inspect_ai":
            return found
        return importlib.metadata.EntryPoints(ep for ep in found if ep.name != "mara_bench")
    importlib.metadata.entry_points = entry_points
from inspect_ai._cli.main import main
sys.argv[0] = "inspect"
main()
"""


def _run(variant: str, task_file: Path, log_dir: Path) -> tuple[float, int, float]:
    """(wall seconds, max RSS in KiB, CPU seconds) of one ``inspect eval`` in a fresh interpreter."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, variant, "eval", task_file.name, "--model", "mockllm/model"]
        + ["--log-dir", str(log_dir), "--display", "none"],
        cwd=task_file.parent,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    _, rss, cpu, loaded = next(
        line.split() for line in done.stderr.splitlines() if line.startswith("MAXRSS_KIB")
    )
    assert loaded == str(variant == "with"), f"{variant}: the entry point was loaded: {loaded}"
    return elapsed, int(rss), float(cpu)


def _spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def test_inspect_eval_startup_with_vs_without_mara_bench(benchmark, tmp_path):
    task_file = tmp_path / "trivial.py"
    task_file.write_text(TASK)
    pairs: list[tuple[tuple[float, int, float], tuple[float, int, float]]] = []

    def pair() -> None:
        without = _run("without", task_file, tmp_path / "logs")
        with_package = _run("with", task_file, tmp_path / "logs")
        pairs.append((with_package, without))

    benchmark.pedantic(pair, rounds=ROUNDS, iterations=1)
    taxes = _spread([w[0] - wo[0] for w, wo in pairs])
    ratios = _spread([w[0] / wo[0] for w, wo in pairs])
    memory = _spread([(w[1] - wo[1]) / 1024 for w, wo in pairs])
    cpu_taxes = _spread([w[2] - wo[2] for w, wo in pairs])
    cpu_ratios = _spread([w[2] / wo[2] for w, wo in pairs])
    benchmark.extra_info.update(
        {
            "tax_s": taxes,
            "ratio": ratios,
            "extra_max_rss_mib": memory,
            "cpu_tax_s": cpu_taxes,
            "cpu_ratio": cpu_ratios,
        }
    )
    print(
        "\ninspect eval start-up, with/without mara-bench per pair (min / median / max): tax "
        + " / ".join(f"{taxes[k]:+.2f}" for k in ("min", "median", "max"))
        + " s, ratio "
        + " / ".join(f"{ratios[k]:.2f}" for k in ("min", "median", "max"))
        + ", extra max RSS "
        + " / ".join(f"{memory[k]:+.1f}" for k in ("min", "median", "max"))
        + " MiB, CPU tax "
        + " / ".join(f"{cpu_taxes[k]:+.2f}" for k in ("min", "median", "max"))
        + " s, CPU ratio "
        + " / ".join(f"{cpu_ratios[k]:.2f}" for k in ("min", "median", "max"))
    )
