"""AIME 2024, AIME 2025 and BeyondAIME, scored by final-answer matching (integers as integers); and DAPO-Math-17k,
a math training set (``task.benchmark: dapo_math`` in a training recipe), scored the same way.

Run: ``inspect eval tasks/aime.py@aime2025 --model <model>`` (or ``mara_bench/aime2025``); ``mara tasks aime2025`` lists
the parameters. MarsRL's protocol: ``-T protocol=marsrl``. Each task is its declaration (``BenchmarkSpec``) above it.
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import AIME2024_HF, BEYOND_AIME_MARSRL, PROBLEM_ANSWER, VERL_PARQUET
from mara_bench.harness.datasets.specs import BenchmarkSpec
from mara_bench.harness.task_builder import benchmark

AIME2025 = BenchmarkSpec(
    name="aime2025",
    title="AIME 2025 I+II (30 problems)",
    hf_path="math-ai/aime25",
    split="test",
    revision="563bb8404243c5f09de6ec262f2db674fe5bce9b",
    judge="math",
    row_formats=(PROBLEM_ANSWER,),
    instruction="direct_math",
    local_files=("aime2025/aime2025_test.jsonl",),
)
# Maxwell-Jia/AIME_2024 and ByteDance-Seed/BeyondAIME: no commit sha found; recorded at load time.
AIME2024 = BenchmarkSpec(
    name="aime2024",
    title="AIME 2024 I+II (30 problems)",
    hf_path="Maxwell-Jia/AIME_2024",
    split="train",
    judge="math",
    row_formats=(AIME2024_HF, PROBLEM_ANSWER),
    instruction="direct_math",
    local_files=("aime2024/aime2024_test.jsonl",),
)
BEYOND_AIME = BenchmarkSpec(
    name="beyond_aime",
    title="BeyondAIME (100 problems, answers up to 8 digits)",
    hf_path="ByteDance-Seed/BeyondAIME",
    split="test",
    judge="math",
    row_formats=(PROBLEM_ANSWER, BEYOND_AIME_MARSRL),
    instruction="direct_math",
    local_files=("beyond_aime/beyond_aime.jsonl",),
)

DAPO_WRAPPER = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n",
    '\n\nRemember to put your answer on its own line after "Answer:".',
)
"""DAPO-Math-17k's instruction around every problem (BytedTsinghua-SIA/DAPO-Math-17k ``prompt``)."""

# A training set only (its one split is "train"). MarsRL (arXiv:2511.11373 §4.1, liushulinle/MarsRL) names no
# training set; DAPO-Math-17k (the DAPO paper that MarsRL cites for BeyondAIME) is the open math RL set
# this benchmark offers for `task: {benchmark: dapo_math, judge: math, system: vc}`. open-r1's copy is the
# original's distinct problems once each (the original repeats every problem); no commit sha found:
# the revision read is recorded at load time.
DAPO_MATH = BenchmarkSpec(
    name="dapo_math",
    title="DAPO-Math-17k (about 17k problems, integer answers), a training set",
    hf_path="open-r1/DAPO-Math-17k-Processed",
    hf_config="all",
    split="train",
    judge="math",
    row_formats=(VERL_PARQUET,),
    instruction="direct_math",
    local_files=("dapo_math/train.parquet", "dapo_math/train.jsonl"),
    source_names=("math_dapo",),
    question_wrapper=DAPO_WRAPPER,
)


@task
@benchmark(AIME2024)
def aime2024() -> Task: ...


@task
@benchmark(AIME2025)
def aime2025() -> Task: ...


@task
@benchmark(BEYOND_AIME)
def beyond_aime() -> Task: ...


@task
@benchmark(DAPO_MATH)
def dapo_math() -> Task: ...
