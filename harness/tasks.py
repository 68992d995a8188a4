"""``@benchmark(SPEC)``: turns a task file's declaration into the benchmark's Inspect task function.

    AIME2025 = BenchmarkSpec(name="aime2025", title=..., hf_path="math-ai/aime25", ..., judge="math")

    @task
    @benchmark(AIME2025)
    def aime2025() -> Task: ...

The declaration is the one source of truth: the loader, ``mara tasks``, a training recipe's ``task.benchmark`` and
the leaderboards read it (``mara_bench.harness.datasets.BENCHMARKS`` collects the task files' declarations), and the task's
docstring is generated from it (``task_docstring``). ``TaskArguments`` is the one declaration of the parameters
every task takes (``-T name=value``): the task function's signature and the docstring's parameter listing are built
from it, and ``mara_bench.harness.evaluation.benchmark_task`` reads its arguments through it. Any other ``-T`` option is a
system option. Everything is assembled by ``benchmark_task``, imported when a task is created: registering the
tasks (``mara_bench.harness._registry``) loads nothing heavy.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from inspect_ai import Task

if TYPE_CHECKING:
    from mara_bench.harness.datasets.specs import BenchmarkSpec

SHOWN_ATTRIBUTES = ("__module__", "__name__", "__qualname__")
SYSTEM_OPTIONS = "system_options"
"""The name of the task function's ``**`` parameter: every ``-T`` option that is not a task parameter."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class TaskArguments:
    """The parameters every benchmark task takes (``-T name=value``), with their defaults; the one declaration."""

    system: str = field(
        default="direct", metadata=_help("the agent system (mara tasks lists each one's options)")
    )
    protocol: str | None = field(
        default=None, metadata=_help("a paper's preset: sampling, epochs, judge, limits")
    )
    judge: str | None = field(
        default=None, metadata=_help("the judge; default: the protocol's, else the benchmark's")
    )
    data: str | None = field(
        default=None, metadata=_help("a local file or folder, or 'samples' (the bundled rows)")
    )
    ids: str | int | list[str | int] | None = field(
        default=None, metadata=_help("sample ids, or a file of ids")
    )
    limit: int | None = field(default=None, metadata=_help("evaluate the first N samples"))
    epochs: int | None = field(default=None, metadata=_help("attempts per sample (overrides the protocol's)"))
    reducers: str | list[str] | None = field(
        default=None, metadata=_help("avg@k, pass@k, maj@k, comma-separated")
    )
    breakdown: str | list[str] | None = field(
        default=None, metadata=_help("metadata keys to break scores down by")
    )
    judge_timeout: float | None = field(default=None, metadata=_help("seconds per grader call (LLM judges)"))
    data_file: str | None = field(
        default=None, metadata=_help("which of a data folder's candidate files to read (by name)")
    )
    force_data: bool = field(default=False, metadata=_help("load a file that holds another benchmark's rows"))
    list_final_stop: bool = field(
        default=False, metadata=_help("gaia judge: ignore a full stop ending a list answer (not official)")
    )
    audit: str | None = field(
        default=None,
        metadata=_help("a human-labelled answers file: score the judges, not a model (harness.audit)"),
    )
    second_grader: str | None = field(
        default=None, metadata=_help("a second grader model that re-judges every sample (role grader2)")
    )


TASK_PARAMETERS = fields(TaskArguments)
TASK_PARAMETER_NAMES = tuple(parameter.name for parameter in TASK_PARAMETERS)


def split_task_arguments(arguments: Mapping[str, Any]) -> tuple[TaskArguments, dict[str, Any]]:
    """``arguments`` split into the task's own and the system's options (every other name)."""
    own = {key: value for key, value in arguments.items() if key in TASK_PARAMETER_NAMES}
    system_options = {key: value for key, value in arguments.items() if key not in TASK_PARAMETER_NAMES}
    return TaskArguments(**own), system_options


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
    """The decorator making stub ``def <spec.name>() -> Task: ...`` the task function of the benchmark ``spec``."""

    def task_of(stub: Callable[[], Any]) -> Callable[..., Task]:
        if stub.__name__ != spec.name:
            raise ValueError(f"task {stub.__name__!r} declares benchmark {spec.name!r}: name them alike")

        def task_function(**arguments: Any) -> Task:
            from mara_bench.harness.evaluation import benchmark_task

            return benchmark_task(spec.name, **arguments)

        for attribute in SHOWN_ATTRIBUTES:  # not functools.wraps: its __wrapped__ would hide this signature
            setattr(task_function, attribute, getattr(stub, attribute))
        task_function.__doc__ = task_docstring(spec)
        task_function.__signature__ = _signature()  # type: ignore[attr-defined]
        return task_function

    return task_of
