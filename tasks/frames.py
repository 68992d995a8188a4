"""FRAMES (824 questions), judged by LLM answer equivalence.

Run: ``inspect eval tasks/frames.py@frames --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def frames(**options: Any) -> Task:
    """FRAMES test (824 questions)."""
    return benchmark_task("frames", **options)
