"""AIME 2024, AIME 2025 and BeyondAIME, scored by final-answer matching (integers as integers); and DAPO-Math-17k,
a math training set (``task.benchmark: dapo_math`` in a training recipe), scored the same way.

Run: ``inspect eval tasks/aime.py@aime2025 --model <model>`` (or ``mara_bench/aime2025``) ``[-T system=direct]
[-T protocol=…] [-T judge=…] [-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K]
[-T reducers=avg,pass@1,maj]``; any other ``-T`` option goes to the system. MarsRL's protocol: ``-T protocol=marsrl``.
"""

from inspect_ai import Task, task

from harness.tasks import benchmark


@task
@benchmark
def aime2024() -> Task:
    """AIME 2024 I+II (30 problems). Dataset: Maxwell-Jia/AIME_2024 · judge: math · protocol: default."""


@task
@benchmark
def aime2025() -> Task:
    """AIME 2025 I+II (30 problems). Dataset: math-ai/aime25 · judge: math · protocol: default."""


@task
@benchmark
def beyond_aime() -> Task:
    """BeyondAIME (100 problems, answers up to 8 digits). Dataset: ByteDance-Seed/BeyondAIME · judge: math ·
    protocol: default."""


@task
@benchmark
def dapo_math() -> Task:
    """DAPO-Math-17k (about 17k problems, integer answers), a training set: its one split is ``train``. Dataset:
    open-r1/DAPO-Math-17k-Processed · judge: math · protocol: default."""
