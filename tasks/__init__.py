"""mara-bench's Inspect tasks, one thin file per benchmark family.

Run a file's task (``inspect eval tasks/aime.py@aime2025``) or the registered one (``inspect eval
mara_bench/aime2025``): the package ``mara_bench`` is this folder (``mara_bench`` links here), registered with
Inspect by the entry point ``harness._registry``. Each file declares its benchmarks (``BenchmarkSpec``: dataset id
and revision, row formats, prompt, judge, default protocol) and the harness reads nothing else about them;
``harness.tasks.benchmark`` makes each declaration a task, its docstring and typed parameters generated from it.
"""
