"""mara-bench: one import package, ``mara_bench``. This folder holds its Inspect tasks, one thin file per benchmark
family; the checkout's other folders are its subpackages (``mara_bench.harness``, ``mara_bench.judges``,
``mara_bench.trainer``, ``mara_bench.leaderboards``: pyproject's ``package-dir``).

Run a file's task (``inspect eval tasks/aime.py@aime2025``) or the registered one (``inspect eval
mara_bench/aime2025``), registered with Inspect by the entry point ``mara_bench.harness._registry``, which imports
every task file through ``mara_bench.catalog``. Each file declares its benchmarks (``BenchmarkSpec``: dataset id and
revision, row formats, prompt, judge, default protocol) and the harness reads nothing else about them;
``mara_bench.harness.task_builder.benchmark`` makes each declaration a task, registering the declaration as the file
is imported, its docstring and typed parameters generated from it. This ``__init__`` imports no task file, so
importing a subpackage (``mara_bench.harness`` ...) loads none.
"""

from pathlib import Path

_FOLDER = Path(__file__).resolve().parent
if not (_FOLDER / "harness").is_dir():
    # A checkout (through the `mara_bench` link in its root, or an editable install): this package is tasks/ and
    # its subpackages are the folders beside it, so they are found there, in this very checkout.
    __path__.append(str(_FOLDER.parent))
