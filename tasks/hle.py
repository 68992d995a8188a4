"""Humanity's Last Exam, text-only questions (cais/hle, gated), judged with the official HLE prompt.

Run: ``inspect eval tasks/hle.py@hle --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def hle(**options: Any) -> Task:
    """HLE text-only; the shared 500-question WebThinker subset loads with -T data=."""
    return benchmark_task("hle", **options)
