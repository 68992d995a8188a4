"""GAIA-text: the 103 text-only GAIA 2023 validation questions (gated, never redistributed), quasi-exact match.

Run: ``inspect eval tasks/gaia.py@gaia --model <model>`` (or ``mara_bench/gaia``); ``mara tasks gaia`` lists
the parameters. MATPO's protocol: ``-T protocol=matpo``. Each task is its declaration (``BenchmarkSpec``) above it.
"""

from inspect_ai import Task, task

from mara_bench.harness.datasets.formats import GAIA, WEBTHINKER
from mara_bench.harness.datasets.specs import BenchmarkSpec, in_gaia_text_103, text_only
from mara_bench.harness.task_builder import benchmark

GAIA = BenchmarkSpec(
    name="gaia",
    title="GAIA-text (103 questions of the 2023_all validation split)",
    hf_path="gaia-benchmark/GAIA",
    hf_config="2023_all",
    split="validation",
    revision="682dd723ee1e1697e00360edccf2366dc8418dd9",
    gated=True,
    judge="gaia",
    row_formats=(GAIA, WEBTHINKER),
    instruction="direct_gaia",
    local_files=("gaia/dev.json", "gaia/metadata.jsonl", "2023/validation/metadata.parquet"),
    row_filter=text_only("file_name"),
    subset=in_gaia_text_103,
)


@task
@benchmark(GAIA)
def gaia() -> Task: ...
