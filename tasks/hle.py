"""Humanity's Last Exam, text-only questions (cais/hle, gated), judged with the official HLE prompt.

Run: ``inspect eval tasks/hle.py@hle --model <model>`` (or ``mara_bench/hle``); ``mara tasks hle`` lists
the parameters. MARS's protocol: ``-T protocol=mars``. Each task is its declaration (``BenchmarkSpec``) above it.
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import QUESTION_ANSWER, WEBTHINKER
from mara_bench.harness.datasets.specs import BenchmarkSpec, text_only
from mara_bench.harness.task_builder import benchmark

HLE = BenchmarkSpec(
    name="hle",
    title="HLE text-only; the shared 500-question WebThinker subset loads with -T data=",
    hf_path="cais/hle",
    split="test",
    revision="5a81a4c7271a2a2a312b9a690f0c2fde837e4c29",
    gated=True,
    judge="hle",
    row_formats=(QUESTION_ANSWER, WEBTHINKER),
    instruction="direct_hle",  # the official code's one SYSTEM_PROMPT for every question type
    local_files=("hle/hle_text_500_webthinker.json",),
    row_filter=text_only("image"),
)


@task
@benchmark(HLE)
def hle() -> Task: ...
