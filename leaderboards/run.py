"""Run a suite through Inspect's ``eval_set``: one task per checkpoint × task × system × protocol.

Each task carries the leaderboard identity in its metadata (suite, checkpoint, leaderboard task name, night, and the
mara-bench code version) so that the logs can be collected without the suite file. A suite's ``settings.tools``
pins every tool-using run to one tool snapshot (``-T tool_cache/tool_snapshot/tool_store``). ``eval_set`` is resumable: a
second call into the same log directory only runs what is missing or failed.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set, task_with
from inspect_ai.model import get_model, model_roles

from mara_bench.core.inspect_compat import init_model_roles
from mara_bench.harness.systems import get_system
from mara_bench.leaderboards.suite import Checkpoint, RoleMatrix, Suite, SuiteError, SuiteTask

META_SUITE = "leaderboard_suite"
META_CHECKPOINT = "checkpoint"
META_TASK = "leaderboard_task"
META_NIGHT = "night"
META_CODE_VERSION = "code_version"
META_ROLE_MATRIX = "role_matrix"
"""Task metadata of a role-matrix run: {role: variant}."""


def load_task_function(spec: str, search_dirs: tuple[Path, ...] = ()) -> Callable[..., Task]:
    """The ``@task`` function named by ``file.py@name`` (relative paths tried in ``search_dirs``) or ``module:name``."""
    if "@" in spec:
        file_part, name = spec.rsplit("@", 1)
        module = _import_file(_find_file(file_part, search_dirs))
    else:
        module_name, name = spec.rsplit(":", 1)
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise SuiteError(f"task {spec!r}: cannot import module {module_name!r}: {error}") from error
    function = getattr(module, name, None)
    if not callable(function):
        raise SuiteError(f"task {spec!r}: no task function {name!r} in {module.__name__}")
    return function


def code_version() -> str:
    """The mara-bench code that runs the suite: its git commit (``-dirty`` with uncommitted changes to tracked files)
    in a checkout, else the installed package version. (Inspect's own git revision is of the current folder.)"""
    root = Path(__file__).resolve().parents[1]
    if (root / ".git").exists():
        try:
            commit = _git(root, "rev-parse", "--short=12", "HEAD")
            changed = _git(root, "status", "--porcelain", "--untracked-files=no")
            return commit + ("-dirty" if changed else "")
        except (OSError, subprocess.SubprocessError):
            pass  # git missing or failing: fall back to the package version
    return "mara-bench " + importlib.metadata.version("mara-bench")


def build_tasks(suite: Suite, night: str) -> list[Task]:
    """The Inspect tasks for one night of ``suite``, each bound to its checkpoint's model and roles."""
    search_dirs = (Path.cwd(),) + ((suite.source.parent,) if suite.source else ())
    version = code_version()
    tasks = []
    for suite_task in suite.tasks:
        function = load_task_function(suite_task.task, search_dirs)
        for checkpoint in suite.checkpoints:
            for system in suite_task.systems:
                for protocol in suite_task.protocols:
                    tasks.append(
                        _bound_task(function, suite, suite_task, checkpoint, system, protocol, night, version)
                    )
    if suite.role_matrix is not None:
        tasks += _role_matrix_tasks(suite, suite.role_matrix, night, version, search_dirs)
    return tasks


def _role_matrix_tasks(
    suite: Suite, matrix: RoleMatrix, night: str, version: str, search_dirs: tuple[Path, ...]
) -> list[Task]:
    """One task per combination of the matrix's role variants, each named by its combination."""
    suite_task = next(t for t in suite.tasks if t.name == matrix.task)
    function = load_task_function(suite_task.task, search_dirs)
    kept = suite.checkpoint(matrix.checkpoint) if matrix.checkpoint else suite.checkpoints[0]
    return [
        _bound_task(
            function,
            suite,
            suite_task,
            matrix.bound(combination, kept),
            matrix.system,
            matrix.protocol,
            night,
            version,
            extra_metadata={META_ROLE_MATRIX: combination},
        )
        for combination in matrix.combinations()
    ]


def run_suite(
    suite: Suite, log_dir: str, night: str, display: str = "none", tasks: list[Task] | None = None
) -> bool:
    """Run (or resume) one night of ``suite`` into ``log_dir``; True when every task finished successfully.
    ``tasks``: the night's tasks when already built (``build_tasks``), so a bad suite fails before any folder."""
    options: dict[str, Any] = dict(suite.settings.eval)
    tasks = build_tasks(suite, night) if tasks is None else tasks
    success, _logs = eval_set(tasks, log_dir=log_dir, display=display, **options)
    return bool(success)


def _bound_task(
    function: Callable[..., Task],
    suite: Suite,
    suite_task: SuiteTask,
    checkpoint: Checkpoint,
    system: str | None,
    protocol: str | None,
    night: str,
    version: str,
    extra_metadata: dict[str, Any] | None = None,
) -> Task:
    args = dict(suite_task.args)
    if suite.settings.tools is not None and get_system(system or "direct").tools:
        args = {**suite.settings.tools.task_args(), **args}
    if system is not None:
        args["system"] = system
    if protocol is not None:
        args["protocol"] = protocol
    try:
        task = _created_with_roles(function, args, checkpoint.roles)
    except (TypeError, ValueError) as error:  # ValueError: the harness's one-line option errors
        where = f"{suite.source}: " if suite.source else ""
        raise SuiteError(
            f"{where}tasks[{suite_task.name}].args: {error}; fix the task's args in the suite"
        ) from None
    metadata = {
        **(task.metadata or {}),
        META_SUITE: suite.name,
        META_CHECKPOINT: checkpoint.name,
        META_TASK: suite_task.name,
        META_NIGHT: night,
        META_CODE_VERSION: version,
        **(extra_metadata or {}),
    }
    model = (
        get_model(checkpoint.model, **checkpoint.model_args) if checkpoint.model_args else checkpoint.model
    )
    # the checkpoint's roles join the task's own (e.g. the protocol's judge model as the grader), never drop them
    roles = {**(task.model_roles or {}), **checkpoint.roles}
    return task_with(task, model=model, model_roles=roles or None, metadata=metadata)


def _created_with_roles(function: Callable[..., Task], args: dict[str, Any], roles: dict[str, str]) -> Task:
    """The task created as under ``inspect eval --model-role``: with the checkpoint's roles bound, so a task that
    checks for its grader at creation (an LLM judge) finds the checkpoint's."""
    previous = model_roles()
    init_model_roles({**previous, **{role: get_model(model) for role, model in roles.items()}})
    try:
        return function(**args)
    finally:
        init_model_roles(previous)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def _find_file(file_part: str, search_dirs: tuple[Path, ...]) -> Path:
    candidate = Path(file_part)
    if candidate.is_absolute() and candidate.is_file():
        return candidate
    for directory in search_dirs:
        if (directory / candidate).is_file():
            return (directory / candidate).resolve()
    tried = ", ".join(str(d / candidate) for d in search_dirs) or file_part
    raise SuiteError(f"task file {file_part!r} not found (tried {tried})")


def _import_file(path: Path):
    module_name = "leaderboard_tasks_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SuiteError(f"task file {path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
