"""Harness cost per sample in executed instructions: the same two evals as ``bench_harness_overhead.py``, counted
under valgrind's callgrind instead of timed.

A time ratio on a 2-core machine shared with other jobs moves by +-5% from run to run, more than most single
changes to the harness cost; the number of instructions an eval executes does not depend on the load. Each side
(harness: ``aime2025 -T system=direct``; plain: generate() + match() on the same messages) runs in its own process
under ``valgrind --tool=callgrind --instr-atstart=no``: imports and one warm-up eval run uninstrumented, then
instrumentation is switched on (``callgrind_control -i on``) for one eval only. Two sample counts per side give
instructions per sample (the slope) and per eval (the intercept: building the task, the results panel, the
metrics), so the report holds the per-sample ratio and the ratio at ``SAMPLES`` samples, which is what the timed
benchmark compares. The larger count is ``SAMPLES`` itself: the cost per sample grows with the eval's length (from
20-50 to 50-150 samples, +20% on the harness's side and +6% on the plain one's), so a ratio extrapolated from
shorter evals understates it. The scripted model replies at once, and both sides run with ``score_display=False``
(``UNTIMED``): Inspect recomputes the displayed metrics every 0.9 s of wall clock, work that under valgrind's ~50x
slow-down would run 50 times as often as in a real eval (and more often the more loaded the machine is). The display
is the timed benchmark's, ``display="none"``: its progress refreshes, once a second, draw nothing (the live view is
transient and the console is not a terminal), but at the end it still lays out the results panel for a quiet console,
and that layout grows with the number of metrics (the harness's ``accounting`` column is 14 of its 18 rows). The
plain display, counted here before, lays the panel out as plain text and so left that cost out. Instructions are not
time (cache misses, the allocator and the garbage collector weigh differently), so this complements the CPU-time
ratio, it does not replace it.

Run (about 6 minutes of one core): ``PYTHONPATH=$PWD .venv/bin/python benchmarks/harness_instructions.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_harness_overhead import (  # noqa: E402  (the benchmarks folder is not a package)
    SAMPLES,
    aime_file,
    harness_task,
    plain_samples,
    plain_task,
    run_eval,
)

COUNTS = (50, SAMPLES)
"""The two sample counts each side is counted at (slope and intercept)."""
SIDES = ("harness", "plain")
UNTIMED = {"display": "none", "score_display": False}
"""Eval options: the timed benchmark's display, without Inspect's wall-clock-driven metric updates (see the module
docstring)."""
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


@dataclass(frozen=True)
class Line:
    """Instructions of one side: per sample and per eval."""

    per_sample: float
    per_eval: float

    def at(self, samples: int) -> float:
        return self.per_eval + samples * self.per_sample


def counted_eval(side: str, samples: int) -> None:
    """Inside valgrind: warm up uninstrumented, then count one eval of ``samples`` samples of ``side``."""
    directory = Path(tempfile.mkdtemp())
    data = aime_file(directory, samples)
    build = partial(harness_task, data) if side == "harness" else partial(plain_task, plain_samples(data))
    run_eval(build, directory / "warm-up", **UNTIMED)
    switch = ["callgrind_control", "-i"]
    subprocess.run([*switch, "on", str(os.getpid())], check=True, capture_output=True)
    run_eval(build, directory / side, **UNTIMED)
    subprocess.run([*switch, "off", str(os.getpid())], check=True, capture_output=True)


def instructions(side: str, samples: int, out_dir: Path) -> int:
    """Instructions of one eval of ``side`` on ``samples`` samples, counted by callgrind in a child process."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out_dir / f'{side}-{samples}.out'}",
        sys.executable,
        __file__,
        side,
        str(samples),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    found = _COLLECTED.search(result.stderr)
    if result.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind run of {side} x {samples} failed:\n{result.stderr[-2000:]}")
    return int(found.group(1))


def line(side: str, out_dir: Path) -> Line:
    small, large = (instructions(side, samples, out_dir) for samples in COUNTS)
    per_sample = (large - small) / (COUNTS[1] - COUNTS[0])
    return Line(per_sample, small - COUNTS[0] * per_sample)


def main() -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("harness_instructions.py: valgrind is not installed (apt-get install -y valgrind)")
    with tempfile.TemporaryDirectory() as out:
        lines = {side: line(side, Path(out)) for side in SIDES}
    ours, plain = lines["harness"], lines["plain"]
    for side, counted in lines.items():
        print(
            f"{side:8s}: {counted.per_sample / 1e6:7.2f} M instructions per sample, "
            f"{counted.per_eval / 1e6:.0f} M per eval"
        )
    print(
        f"harness/plain in instructions: per sample {ours.per_sample / plain.per_sample:.3f}, "
        f"at {SAMPLES} samples {ours.at(SAMPLES) / plain.at(SAMPLES):.3f} (target <= 1.1)"
    )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        counted_eval(sys.argv[1], int(sys.argv[2]))
    else:
        main()
