"""Open-domain QA sets in FlashRAG's versions, scored by lexical EM / cover-EM / F1.

Run: ``inspect eval tasks/qa.py@nq --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def nq(**options: Any) -> Task:
    """Natural Questions (open) test."""
    return benchmark_task("nq", **options)


@task
def triviaqa(**options: Any) -> Task:
    """TriviaQA test (FlashRAG: unfiltered dev)."""
    return benchmark_task("triviaqa", **options)


@task
def popqa(**options: Any) -> Task:
    """PopQA test."""
    return benchmark_task("popqa", **options)


@task
def hotpotqa(**options: Any) -> Task:
    """HotpotQA dev."""
    return benchmark_task("hotpotqa", **options)


@task
def twowiki(**options: Any) -> Task:
    """2WikiMultiHopQA dev."""
    return benchmark_task("twowiki", **options)


@task
def musique(**options: Any) -> Task:
    """MuSiQue-Ans dev."""
    return benchmark_task("musique", **options)


@task
def bamboogle(**options: Any) -> Task:
    """Bamboogle test (125)."""
    return benchmark_task("bamboogle", **options)


@task
def ambigqa(**options: Any) -> Task:
    """AmbigQA dev."""
    return benchmark_task("ambigqa", **options)
