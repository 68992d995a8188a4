"""``@benchmark(SPEC)``: turns a task file's declaration into the benchmark's Inspect task function.

    AIME2025 = BenchmarkSpec(name="aime2025", title=..., hf_path="math-ai/aime25", ..., judge="math")

    @task
    @benchmark(AIME2025)
    def aime2025() -> Task: ...

The declaration is the one source of truth, and the task file declares it upward: the decorator registers it
(``mara_bench.harness.datasets.BENCHMARKS``) when the task file is imported, so the loader, ``mara tasks``, a
training recipe's ``task.benchmark`` and the leaderboards find it there (``mara_bench.catalog`` imports every task
file), and the harness imports no task file. The task's docstring is generated from it (``task_docstring``), and
its signature and parameter listing from ``mara_bench.harness.task_arguments.TaskArguments``. The task function
hands its own declaration to ``mara_bench.harness.evaluation.evaluation_task``, imported when a task is created:
registering the tasks (Inspect's entry point) loads nothing heavy.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from inspect_ai import Task

from mara_bench.harness.datasets.specs import BenchmarkSpec, register_benchmark
from mara_bench.harness.task_arguments import TASK_PARAMETERS

SHOWN_ATTRIBUTES = ("__module__", "__name__", "__qualname__")
SYSTEM_OPTIONS = "system_options"
"""The name of the task function's ``**`` parameter: every ``-T`` option that is not a task parameter."""


def _signature() -> inspect.Signature:
    """``(system: str = 'direct', protocol: str | None = None, …, **system_options: Any) -> Task``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [
        inspect.Parameter(p.name, keyword, default=p.default, annotation=p.type) for p in TASK_PARAMETERS
    ]
    parameters.append(inspect.Parameter(SYSTEM_OPTIONS, inspect.Parameter.VAR_KEYWORD, annotation="Any"))
    return inspect.Signature(parameters, return_annotation="Task")


def type_name(annotation: Any) -> str:
    """``str | None`` for a parameter's annotation, as a reader writes it."""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    text = text.replace("typing.", "").replace("NoneType", "None")
    optional = re.fullmatch(r"Optional\[(.+)\]", text)
    return f"{optional.group(1)} | None" if optional else text


def declaration_lines(spec: BenchmarkSpec) -> list[str]:
    """What the benchmark is, where its rows come from and how they are asked and judged, one fact a line."""
    config = f"{spec.hf_config}/" if spec.hf_config else ""
    revision = spec.revision or "not pinned (the revision read is recorded at load time)"
    prompts = [
        f"{role}: {name}"
        for role, name in (
            ("instruction", spec.instruction),
            ("question template", spec.question_template),
            ("question frame", spec.question_frame),
        )
        if name is not None
    ]
    dataset = (
        f"bundled with mara-bench (harness/datasets/samples/{spec.name}.jsonl)"
        if spec.bundled
        else f"{spec.hf_path} ({config}{spec.split}){' (gated)' if spec.gated else ''} · revision: {revision}"
    )
    return [
        f"Dataset: {dataset}",
        f"Row formats: {', '.join(row_format.name for row_format in spec.row_formats)}",
        f"Prompt: {' · '.join(prompts) if prompts else 'the question as it is'}",
        f"Judge: {spec.judge} · protocol: {spec.protocol}",
    ]


def task_docstring(spec: BenchmarkSpec) -> str:
    """The task's docstring: its title, its declaration and its parameters, all read from the code."""
    parameters = [
        f"  {p.name}: {type_name(p.type)} = {p.default!r} -- {p.metadata['help']}" for p in TASK_PARAMETERS
    ]
    return "\n".join(
        [
            f"{spec.title}.",
            "",
            *declaration_lines(spec),
            "",
            "Parameters (-T name=value; any other name is an option of the system):",
            *parameters,
        ]
    )


def benchmark(spec: BenchmarkSpec) -> Callable[[Callable[[], Any]], Callable[..., Task]]:
    """The decorator making stub ``def <spec.name>() -> Task: ...`` the task function of the benchmark ``spec``,
    and registering ``spec`` as declared in the stub's file."""

    def task_of(stub: Callable[[], Any]) -> Callable[..., Task]:
        if stub.__name__ != spec.name:
            raise ValueError(f"task {stub.__name__!r} declares benchmark {spec.name!r}: name them alike")
        register_benchmark(spec, declared_in=stub.__code__.co_filename)

        def task_function(**arguments: Any) -> Task:
            from mara_bench.harness.evaluation import evaluation_task

            return evaluation_task(spec, **arguments)

        for attribute in SHOWN_ATTRIBUTES:  # not functools.wraps: its __wrapped__ would hide this signature
            setattr(task_function, attribute, getattr(stub, attribute))
        task_function.__doc__ = task_docstring(spec)
        task_function.__signature__ = _signature()  # type: ignore[attr-defined]
        return task_function

    return task_of
