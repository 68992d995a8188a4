"""``TaskArguments``: the one declaration of the parameters every benchmark task takes (``-T name=value``), with
their types, defaults and help. The task function's signature and docstring (``mara_bench.harness.task_builder``),
``mara tasks`` and the evaluation (``mara_bench.harness.evaluation``, which splits a task's arguments with
``split_task_arguments``) read it; any other ``-T`` option is an option of the system.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


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
