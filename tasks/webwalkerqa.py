"""WebWalkerQA (680 questions), judged by LLM answer equivalence.

Run: ``inspect eval tasks/webwalkerqa.py@webwalkerqa --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def webwalkerqa(**options: Any) -> Task:
    """WebWalkerQA main split (680 questions)."""
    return benchmark_task("webwalkerqa", **options)
