"""FRAMES (824 questions), judged by LLM answer equivalence.

Run: ``inspect eval tasks/frames.py@frames --model <model>`` (or ``mara_bench/frames``); ``mara tasks frames`` lists
the parameters. MATPO's protocol: ``-T protocol=matpo``. Each task is its declaration (``BenchmarkSpec``) above it.
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import FRAMES_HF, QUESTION_ANSWER
from mara_bench.harness.datasets.specs import BenchmarkSpec
from mara_bench.harness.task_builder import benchmark

# google/frames-benchmark: no commit sha found; recorded at load time.
FRAMES = BenchmarkSpec(
    name="frames",
    title="FRAMES test (824 questions)",
    hf_path="google/frames-benchmark",
    split="test",
    judge="equivalence",
    row_formats=(FRAMES_HF, QUESTION_ANSWER),
    local_files=("frames/frames_824.jsonl",),
)


@task
@benchmark(FRAMES)
def frames() -> Task: ...
