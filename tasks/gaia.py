"""GAIA-text: the 103 text-only GAIA 2023 validation questions (gated, never redistributed), quasi-exact match.

Run: ``inspect eval tasks/gaia.py@gaia --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def gaia(**options: Any) -> Task:
    """GAIA-text (103 questions from gaia-benchmark/GAIA 2023_all validation)."""
    return benchmark_task("gaia", **options)
