"""Leaderboard suites: the YAML that lists checkpoints × tasks (× systems × protocols) and what to compare.

A suite is validated strictly: an unknown key, a missing field or a reference to an undeclared checkpoint or task
raises :class:`SuiteError` naming the file and the place to fix. Example (see ``leaderboards/suites/*.yaml``)::

    name: nightly
    settings: {alpha: 0.05, correction: holm, min_effect: 0.0, eval: {limit: 50}}
    checkpoints:
      - name: mars-8b-step200
        model: local/runs/mars-8b/step_200
        roles: {grader: openai/o3-mini-2025-01-31}
    tasks:
      - name: aime2025
        task: tasks/aime.py@aime2025
        args: {data: ../shared/data/aime2025}
        systems: [direct, vc]
        protocols: [marsrl]
    comparisons:
      - {candidate: mars-8b-step200, baseline: mars-8b-step100}
    cross_solver:
      checkpoints: [qwen3-8b+vc, gpt-4.1+vc]
      tasks: [aime2025]
      system: vc
      alone_score: solver
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class SuiteError(ValueError):
    """A suite file that cannot be used; the message names the file and the field to fix."""


EVAL_OPTIONS = frozenset(
    {
        "limit",
        "epochs",
        "max_samples",
        "max_tasks",
        "max_connections",
        "fail_on_error",
        "retry_attempts",
        "log_format",
    }
)
"""``eval_set`` options a suite may set under ``settings.eval``."""

CORRECTIONS = ("holm", "bh")


@dataclass(frozen=True)
class Checkpoint:
    """A model under evaluation: any Inspect model string (``openai/…``, ``hf/…``, ``local/…``) plus model roles."""

    name: str
    model: str
    model_args: dict[str, Any] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteTask:
    """A task spec (``file.py@function`` or ``package.module:function``) with its ``-T`` args, systems, protocols."""

    name: str
    task: str
    args: dict[str, Any] = field(default_factory=dict)
    systems: tuple[str | None, ...] = (None,)
    protocols: tuple[str | None, ...] = (None,)


@dataclass(frozen=True)
class PairComparison:
    """Compare ``candidate`` against ``baseline`` on every task/system/protocol both ran in the same night."""

    candidate: str
    baseline: str


@dataclass(frozen=True)
class CrossSolver:
    """MarsRL Table 3: rows = solver checkpoints, columns = solver alone vs system per task."""

    checkpoints: tuple[str, ...]
    tasks: tuple[str, ...]
    system: str = "vc"
    alone_score: str = "solver"
    """The named answer scored as *solver alone* in the system's own run (the judges record it as
    ``<judge>_<alone_score>``, e.g. ``math_solver``)."""


@dataclass(frozen=True)
class Settings:
    """Statistics and eval options for the whole suite."""

    alpha: float = 0.05
    correction: str = "holm"
    min_effect: float = 0.0
    eval: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    name: str
    checkpoints: tuple[Checkpoint, ...]
    tasks: tuple[SuiteTask, ...]
    comparisons: tuple[PairComparison, ...] = ()
    cross_solver: CrossSolver | None = None
    settings: Settings = Settings()
    description: str = ""
    source: Path | None = None

    def checkpoint(self, name: str) -> Checkpoint:
        return next(c for c in self.checkpoints if c.name == name)


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite YAML file."""
    path = Path(path)
    if not path.is_file():
        raise SuiteError(f"suite file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise SuiteError(f"{path}: not valid YAML: {error}") from error
    return parse_suite(raw, source=path)


def parse_suite(raw: Any, source: Path | None = None) -> Suite:
    """Validate a suite given as parsed YAML (a mapping)."""
    where = str(source) if source else "suite"
    top = _mapping(
        raw,
        where,
        required={"name", "checkpoints", "tasks"},
        optional={"description", "settings", "comparisons", "cross_solver"},
    )
    checkpoints = tuple(
        _checkpoint(item, f"{where}: checkpoints[{i}]")
        for i, item in enumerate(_list(top["checkpoints"], f"{where}: checkpoints"))
    )
    tasks = tuple(
        _task(item, f"{where}: tasks[{i}]") for i, item in enumerate(_list(top["tasks"], f"{where}: tasks"))
    )
    _unique([c.name for c in checkpoints], f"{where}: checkpoints")
    _unique([t.name for t in tasks], f"{where}: tasks")
    checkpoint_names = {c.name for c in checkpoints}
    task_names = {t.name for t in tasks}

    comparisons = []
    for i, item in enumerate(_list(top.get("comparisons", []), f"{where}: comparisons", allow_empty=True)):
        entry = _mapping(item, f"{where}: comparisons[{i}]", required={"candidate", "baseline"})
        for key in ("candidate", "baseline"):
            _known(entry[key], checkpoint_names, f"{where}: comparisons[{i}].{key}", "checkpoint")
        comparisons.append(PairComparison(candidate=entry["candidate"], baseline=entry["baseline"]))

    cross_solver = None
    if top.get("cross_solver") is not None:
        cross_solver = _cross_solver(
            top["cross_solver"], f"{where}: cross_solver", checkpoint_names, task_names
        )

    return Suite(
        name=_string(top["name"], f"{where}: name"),
        description=str(top.get("description", "")),
        checkpoints=checkpoints,
        tasks=tasks,
        comparisons=tuple(comparisons),
        cross_solver=cross_solver,
        settings=_settings(top.get("settings", {}), f"{where}: settings"),
        source=source,
    )


def _checkpoint(raw: Any, where: str) -> Checkpoint:
    entry = _mapping(raw, where, required={"name", "model"}, optional={"model_args", "roles"})
    roles = _mapping(entry.get("roles", {}), f"{where}.roles", free=True)
    return Checkpoint(
        name=_string(entry["name"], f"{where}.name"),
        model=_string(entry["model"], f"{where}.model"),
        model_args=_mapping(entry.get("model_args", {}), f"{where}.model_args", free=True),
        roles={role: _string(model, f"{where}.roles.{role}") for role, model in roles.items()},
    )


def _task(raw: Any, where: str) -> SuiteTask:
    entry = _mapping(raw, where, required={"task"}, optional={"name", "args", "systems", "protocols"})
    spec = _string(entry["task"], f"{where}.task")
    if "@" not in spec and ":" not in spec:
        raise SuiteError(
            f"{where}.task: {spec!r} must be 'path/to/file.py@task_name' or 'package.module:task_name'"
        )
    args = _mapping(entry.get("args", {}), f"{where}.args", free=True)
    for reserved in ("system", "protocol"):
        if reserved in args:
            raise SuiteError(f"{where}.args: set '{reserved}' with '{reserved}s: [...]', not in args")
    systems = _names_or_default(entry.get("systems", [None]), f"{where}.systems")
    protocols = _names_or_default(entry.get("protocols", [None]), f"{where}.protocols")
    default_name = spec.rsplit("@", 1)[-1].rsplit(":", 1)[-1]
    return SuiteTask(
        name=_string(entry.get("name", default_name), f"{where}.name"),
        task=spec,
        args=args,
        systems=systems,
        protocols=protocols,
    )


def _names_or_default(raw: Any, where: str) -> tuple[str | None, ...]:
    """A non-empty list of names (``null`` entries dropped), or ``(None,)``: the task function's own default."""
    return tuple(_string(name, where) for name in _list(raw, where) if name is not None) or (None,)


def _cross_solver(raw: Any, where: str, checkpoint_names: set[str], task_names: set[str]) -> CrossSolver:
    entry = _mapping(raw, where, required={"checkpoints", "tasks"}, optional={"system", "alone_score"})
    checkpoints = tuple(
        _known(c, checkpoint_names, f"{where}.checkpoints", "checkpoint")
        for c in _list(entry["checkpoints"], f"{where}.checkpoints")
    )
    tasks = tuple(
        _known(t, task_names, f"{where}.tasks", "task") for t in _list(entry["tasks"], f"{where}.tasks")
    )
    return CrossSolver(
        checkpoints=checkpoints,
        tasks=tasks,
        system=_string(entry.get("system", "vc"), f"{where}.system"),
        alone_score=_string(entry.get("alone_score", "solver"), f"{where}.alone_score"),
    )


def _settings(raw: Any, where: str) -> Settings:
    entry = _mapping(raw, where, optional={"alpha", "correction", "min_effect", "eval"})
    alpha = entry.get("alpha", 0.05)
    if not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise SuiteError(f"{where}.alpha: must be a number between 0 and 1, got {alpha!r}")
    correction = entry.get("correction", "holm")
    if correction not in CORRECTIONS:
        raise SuiteError(f"{where}.correction: must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    min_effect = entry.get("min_effect", 0.0)
    if not isinstance(min_effect, int | float) or min_effect < 0:
        raise SuiteError(f"{where}.min_effect: must be a non-negative number, got {min_effect!r}")
    eval_options = _mapping(entry.get("eval", {}), f"{where}.eval", optional=EVAL_OPTIONS)
    return Settings(
        alpha=float(alpha), correction=correction, min_effect=float(min_effect), eval=eval_options
    )


def _mapping(
    raw: Any,
    where: str,
    required: set[str] = frozenset(),
    optional: set[str] = frozenset(),
    free: bool = False,
) -> dict[str, Any]:
    if raw is None and not required:
        return {}
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: expected a mapping, got {type(raw).__name__}")
    if not free:
        unknown = sorted(set(raw) - required - optional)
        if unknown:
            allowed = ", ".join(sorted(required | optional))
            raise SuiteError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {allowed}")
    missing = sorted(required - set(raw))
    if missing:
        raise SuiteError(f"{where}: missing required key(s) {', '.join(map(repr, missing))}")
    return dict(raw)


def _list(raw: Any, where: str, allow_empty: bool = False) -> list[Any]:
    if not isinstance(raw, list) or (not raw and not allow_empty):
        raise SuiteError(f"{where}: expected a non-empty list")
    return raw


def _string(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise SuiteError(f"{where}: expected a non-empty string, got {raw!r}")
    return raw


def _known(name: Any, known: set[str], where: str, kind: str) -> str:
    if name not in known:
        raise SuiteError(f"{where}: unknown {kind} {name!r}; declared: {', '.join(sorted(known))}")
    return name


def _unique(names: list[str], where: str) -> None:
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SuiteError(f"{where}: duplicate name(s) {', '.join(map(repr, duplicates))}")
