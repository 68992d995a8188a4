"""A sanity set, not a benchmark: 24 easy questions of our own (12 two-digit sums, 12 look-ups in a one-sentence
passage about an invented country) that a small pretrained chat model such as SmolLM2-135M partly answers, so a
run shows non-zero scores where every real benchmark shows 0. Scored by lexical cover-EM (``acc``: the gold
answer appears in the reply). It ships with mara-bench; its scores say the pipeline and the model work, nothing
about a method.

Run: ``inspect eval tasks/sanity.py --model local/smollm2-135m`` (or ``mara_bench/sanity``).
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import QUESTION_ANSWER
from mara_bench.harness.datasets.specs import BenchmarkSpec
from mara_bench.harness.task_builder import benchmark

SANITY = BenchmarkSpec(
    name="sanity",
    title="Sanity set (ours): 12 two-digit sums and 12 passage look-ups; not a benchmark",
    hf_path="",
    split="test",
    judge="lexical",
    row_formats=(QUESTION_ANSWER,),
    local_files=(),
    bundled=True,
    instruction="direct_qa",
    question_template="direct_qa_user",
)


@task
@benchmark(SANITY)
def sanity() -> Task: ...
