"""WebWalkerQA (680 questions), judged by LLM answer equivalence.

Run: ``inspect eval tasks/webwalkerqa.py@webwalkerqa --model <model>`` (or ``mara_bench/webwalkerqa``)
``[-T system=direct] [-T protocol=…] [-T judge=…] [-T data=<file or folder>|samples] [-T ids=…] [-T limit=N]
[-T epochs=K] [-T reducers=…]``; any other ``-T`` option goes to the system. MATPO's protocol: ``-T protocol=matpo``.
"""

from inspect_ai import Task, task

from harness.datasets.formats import QUESTION_ANSWER, WEBTHINKER
from harness.datasets.specs import BenchmarkSpec
from harness.tasks import benchmark

# callanwu/WebWalkerQA: no commit sha found; recorded at load time.
WEBWALKERQA = BenchmarkSpec(
    name="webwalkerqa",
    hf_path="callanwu/WebWalkerQA",
    split="main",
    judge="equivalence",
    row_formats=(QUESTION_ANSWER, WEBTHINKER),
    local_files=("webwalkerqa/webwalkerqa_test_680.json",),
)


@task
@benchmark
def webwalkerqa() -> Task:
    """WebWalkerQA main split (680 questions). Dataset: callanwu/WebWalkerQA · judge: equivalence ·
    protocol: default."""
