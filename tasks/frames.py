"""FRAMES (824 questions), judged by LLM answer equivalence.

Run: ``inspect eval tasks/frames.py@frames --model <model>`` (or ``mara_bench/frames``) ``[-T system=direct]
[-T protocol=…] [-T judge=…] [-T data=<file or folder>|samples] [-T ids=…] [-T limit=N] [-T epochs=K]
[-T reducers=…]``; any other ``-T`` option goes to the system. MATPO's protocol: ``-T protocol=matpo``.
"""

from inspect_ai import Task, task

from harness.datasets.formats import FRAMES_HF, QUESTION_ANSWER
from harness.datasets.specs import BenchmarkSpec
from harness.tasks import benchmark

# google/frames-benchmark: no commit sha found; recorded at load time.
FRAMES = BenchmarkSpec(
    name="frames",
    hf_path="google/frames-benchmark",
    split="test",
    judge="equivalence",
    row_formats=(FRAMES_HF, QUESTION_ANSWER),
    local_files=("frames/frames_824.jsonl",),
)


@task
@benchmark
def frames() -> Task:
    """FRAMES test (824 questions). Dataset: google/frames-benchmark · judge: equivalence · protocol: default."""
