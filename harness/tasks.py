"""``@benchmark``: turns a task file's named, documented stub into the benchmark's Inspect task function.

    @task
    @benchmark
    def aime2025() -> Task:
        \"\"\"AIME 2025 I+II (30 problems). Dataset: math-ai/aime25 · judge: math · protocol: default.\"\"\"

The stub's name is the benchmark's name (``harness.datasets.specs``) and its docstring is the line a reader sees.
``TaskArguments`` is the one declaration of the parameters every task takes (``-T name=value``): the task
function's signature is built from it (so Inspect and ``mara tasks`` show them with their types and defaults), and
``harness.evaluation.benchmark_task`` reads its arguments through it. Any other ``-T`` option is a system option.
Everything is assembled by ``benchmark_task``, imported when a task is created: registering the tasks
(``harness._registry``) loads nothing heavy.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from inspect_ai import Task

SHOWN_ATTRIBUTES = ("__module__", "__name__", "__qualname__", "__doc__")
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


def benchmark(stub: Callable[[], Any]) -> Callable[..., Task]:
    """The task function of benchmark ``stub.__name__``, named and documented as ``stub``."""
    name = stub.__name__

    def task_function(**arguments: Any) -> Task:
        from harness.evaluation import benchmark_task

        return benchmark_task(name, **arguments)

    for attribute in SHOWN_ATTRIBUTES:  # not functools.wraps: its __wrapped__ would hide this signature
        setattr(task_function, attribute, getattr(stub, attribute))
    task_function.__signature__ = _signature()  # type: ignore[attr-defined]
    return task_function
