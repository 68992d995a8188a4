"""AIME 2024, AIME 2025 and BeyondAIME, scored by final-answer matching (integers as integers).

Run: ``inspect eval tasks/aime.py@aime2024 --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def aime2024(**options: Any) -> Task:
    """AIME 2024 I+II (30 problems)."""
    return benchmark_task("aime2024", **options)


@task
def aime2025(**options: Any) -> Task:
    """AIME 2025 I+II (30 problems)."""
    return benchmark_task("aime2025", **options)


@task
def beyond_aime(**options: Any) -> Task:
    """BeyondAIME (100 problems, answers up to 8 digits)."""
    return benchmark_task("beyond_aime", **options)
