"""WebWalkerQA (680 questions), judged by LLM answer equivalence.

Run: ``inspect eval tasks/webwalkerqa.py@webwalkerqa --model <model>`` (or ``mara_bench/webwalkerqa``);
``mara tasks webwalkerqa`` lists the parameters. MATPO's protocol: ``-T protocol=matpo``. Each task is its
declaration (``BenchmarkSpec``) above it.
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import QUESTION_ANSWER, WEBTHINKER
from mara_bench.harness.datasets.specs import BenchmarkSpec
from mara_bench.harness.task_builder import benchmark

# callanwu/WebWalkerQA: no commit sha found; recorded at load time.
WEBWALKERQA = BenchmarkSpec(
    name="webwalkerqa",
    title="WebWalkerQA main split (680 questions)",
    hf_path="callanwu/WebWalkerQA",
    split="main",
    judge="equivalence",
    row_formats=(QUESTION_ANSWER, WEBTHINKER),
    local_files=("webwalkerqa/webwalkerqa_test_680.json",),
)


@task
@benchmark(WEBWALKERQA)
def webwalkerqa() -> Task: ...
