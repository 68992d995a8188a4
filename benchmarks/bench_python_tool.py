"""The python tool's per-call cost of isolation: ``python_sandbox=bwrap`` vs ``unisolated`` on the same code, and
the bwrap launch of today vs that of ``OLD_COMMIT`` (before the uid drop, seccomp filter, per-call cgroup and
tmpfs working directory), both run on the same code in ``ROUNDS`` interleaved pairs (``_pairs.py``).

Each round runs one unisolated call (untimed by pytest-benchmark, timed here, in ``setup``) and then one bwrap call
(the timed target), so machine load hits both alike; the per-round ratio bwrap / unisolated is reported as
min / median / max in ``extra_info`` and printed, never asserted. The old launch is the tool's two modules
read from git at ``OLD_COMMIT`` (skipped where the checkout does not have it). Two payloads: a trivial print (the launch
overhead itself) and ``import numpy`` (a typical agent call). Run: ``.venv/bin/pytest
benchmarks/bench_python_tool.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from _pairs import interleaved_pairs, ratio_spread

from mara_bench.harness.tools import bwrap
from mara_bench.harness.tools.python_sandbox import SandboxLimits, run_python

ROUNDS = 20
LIMITS = SandboxLimits(timeout=60, memory_mb=2048)
PAYLOADS = {"print": "print(6 * 7)", "numpy": "import numpy\nprint(numpy.arange(10).sum())"}


def _call(code: str, isolation: str) -> float:
    start = time.perf_counter()
    asyncio.run(run_python(code, LIMITS, isolation=isolation))
    return time.perf_counter() - start


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("payload", PAYLOADS)
def test_bwrap_vs_unisolated_per_call(benchmark, payload):
    code = PAYLOADS[payload]
    for isolation in ("bwrap", "unisolated"):  # warm the page cache and bwrap's interpreter check
        _call(code, isolation)
    unisolated: list[float] = []
    benchmark.pedantic(
        lambda: asyncio.run(run_python(code, LIMITS, isolation="bwrap")),
        setup=lambda: unisolated.append(_call(code, "unisolated")),
        rounds=ROUNDS,
        iterations=1,
    )
    ratios = [
        isolated / plain for isolated, plain in zip(benchmark.stats.stats.data, unisolated, strict=True)
    ]
    summary = {
        "unisolated_median_s": statistics.median(unisolated),
        "bwrap_median_s": statistics.median(benchmark.stats.stats.data),
        "ratio_min": min(ratios),
        "ratio_median": statistics.median(ratios),
        "ratio_max": max(ratios),
    }
    benchmark.extra_info.update(summary)
    print(
        f"\n{payload}: unisolated {summary['unisolated_median_s'] * 1e3:.0f} ms, "
        f"bwrap {summary['bwrap_median_s'] * 1e3:.0f} ms (medians); bwrap/unisolated per round "
        f"min {summary['ratio_min']:.2f} median {summary['ratio_median']:.2f} max {summary['ratio_max']:.2f}"
    )


OLD_COMMIT = "c6eca9d"
"""The last commit whose bwrap sandbox ran the code as host root's user namespace, without seccomp or cgroup."""


def _old_source(path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:{path}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent,
    ).stdout


def _old_module(name: str, path: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = str(Path(__file__).parents[1] / path)  # replaced below where it names a file
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(_old_source(path), path, "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def old_run_python(tmp_path_factory):
    """``run_python`` as of ``OLD_COMMIT``: its python_sandbox, bwrap and sandbox_child modules."""
    try:
        old_sandbox = _old_module("old_python_sandbox", "harness/tools/python_sandbox.py")
        old_sandbox.bwrap = _old_module("old_bwrap", "harness/tools/bwrap.py")
        child = _old_source("harness/tools/sandbox_child.py")
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"the old python tool ({OLD_COMMIT}) cannot be read from git here: {error}")
    old_sandbox.CHILD = tmp_path_factory.mktemp("old-child") / "sandbox_child.py"
    old_sandbox.CHILD.write_text(child, encoding="utf-8")
    return old_sandbox.run_python


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
@pytest.mark.parametrize("payload", PAYLOADS)
def test_new_vs_old_bwrap_launch_per_call(benchmark, payload, old_run_python):
    code = PAYLOADS[payload]

    def timed(run) -> float:
        start = time.perf_counter()
        asyncio.run(run(code, LIMITS))
        return time.perf_counter() - start

    timed(run_python), timed(old_run_python)  # warm the page cache and both interpreter checks
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(lambda: timed(run_python), lambda: timed(old_run_python), ROUNDS),
        rounds=1,
        iterations=1,
    )
    spread = ratio_spread(pairs, lambda pair: pair.ours / pair.baseline)
    medians = {
        "old_median_s": statistics.median(pair.baseline for pair in pairs),
        "new_median_s": statistics.median(pair.ours for pair in pairs),
    }
    benchmark.extra_info.update({**medians, **{f"new_over_old_{k}": v for k, v in spread.as_dict().items()}})
    print(
        f"\n{payload}: old bwrap launch {medians['old_median_s'] * 1e3:.0f} ms, new "
        f"{medians['new_median_s'] * 1e3:.0f} ms (medians); new/old per pair min/median/max {spread}"
    )
