"""Every task file of mara-bench, imported: each registers its benchmarks as it is defined
(``mara_bench.harness.task_builder.benchmark``), so once this module is imported ``BENCHMARKS`` holds them all.

The harness imports no task file: whoever needs every benchmark imports this module -- Inspect's entry point
(``mara_bench.harness._registry``), ``mara tasks``, a training recipe's ``task.benchmark`` check. A new task file
is added to ``TASK_FILES`` (``tests/tasks/test_task_registry.py`` checks that every file of ``tasks/`` is).
"""

from mara_bench import aime, frames, gaia, hle, qa, sanity, webwalkerqa
from mara_bench.harness.datasets.specs import BENCHMARKS, get_benchmark

TASK_FILES = (aime, frames, gaia, hle, qa, sanity, webwalkerqa)
"""The task files, each a module of ``mara_bench``."""

__all__ = ["BENCHMARKS", "TASK_FILES", "get_benchmark"]
