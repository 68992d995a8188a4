"""Open-domain QA sets in FlashRAG's versions, scored by lexical EM / cover-EM / F1.

Run: ``inspect eval tasks/qa.py@nq --model <model> -T system=direct [-T protocol=…] [-T judge=…]
[-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K] [-T reducers=avg,pass@1,maj]``; any other
``-T`` option goes to the system. Everything else lives in ``harness.evaluation.benchmark_task``.
"""

from typing import Any

from inspect_ai import Task, task

from harness.evaluation import benchmark_task


@task
def nq(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """Natural Questions (open) test."""
    return benchmark_task(
        "nq", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def triviaqa(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """TriviaQA test (FlashRAG: unfiltered dev)."""
    return benchmark_task(
        "triviaqa", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def popqa(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """PopQA test."""
    return benchmark_task(
        "popqa", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def hotpotqa(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """HotpotQA dev."""
    return benchmark_task(
        "hotpotqa", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def twowiki(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """2WikiMultiHopQA dev."""
    return benchmark_task(
        "twowiki", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def musique(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """MuSiQue-Ans dev."""
    return benchmark_task(
        "musique", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def bamboogle(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """Bamboogle test (125)."""
    return benchmark_task(
        "bamboogle", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )


@task
def ambigqa(
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | None = None,
    limit: int | None = None,
    **options: Any,
) -> Task:
    """AmbigQA dev."""
    return benchmark_task(
        "ambigqa", system=system, protocol=protocol, judge=judge, data=data, ids=ids, limit=limit, **options
    )
