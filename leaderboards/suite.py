"""Leaderboard suites: the YAML that lists checkpoints × tasks (× systems × protocols) and what to compare.

A suite is checked when it is loaded, before any eval runs: the sections are typed pydantic dataclasses, so an
unknown key (the closest valid name is suggested), a missing field, a value of the wrong type or range, an unknown
system or protocol name, or a reference to an undeclared checkpoint or task raises :class:`SuiteError` as one line
``<file>: <dotted.key>: <problem>; <fix>``. Example (see ``leaderboards/suites/*.yaml``)::

    name: nightly
    settings: {alpha: 0.05, correction: holm, min_effect: 0.0, eval: {limit: 50},
               tools: {snapshot: web-2026-11, cache: replay}}   # tool-using systems replay this snapshot
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
    role_matrix:
      task: gaia
      system: matpo
      roles:
        planner: {base: local/Qwen/Qwen3-14B, trained: local/runs/matpo/step_180}
        worker: {base: local/Qwen/Qwen3-14B, trained: local/runs/matpo/step_180}
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator, model_validator

from mara_bench.core.typed_config import (
    ConfigError,
    ConfigProblem,
    config_dataclass,
    did_you_mean,
    load_yaml,
    validate,
)
from mara_bench.harness.redaction import credential_problem


class SuiteError(ConfigError):
    """A suite file that cannot be used; the message names the file and the field to fix."""


Name = Annotated[StrictStr, Field(pattern=r"\S")]
"""A non-blank string."""


@config_dataclass(frozen=True, error=SuiteError)
class EvalOptions:
    """The ``eval_set`` options a suite may set under ``settings.eval``."""

    limit: StrictInt | None = Field(default=None, ge=1)
    """Samples per task (all when unset)."""
    epochs: StrictInt | None = Field(default=None, ge=1)
    """Epochs per sample (the protocol's own when unset)."""
    max_samples: StrictInt | None = Field(default=None, ge=1)
    """Samples run at once per task."""
    max_tasks: StrictInt | None = Field(default=None, ge=1)
    """Tasks run at once."""
    max_connections: StrictInt | None = Field(default=None, ge=1)
    """Concurrent connections per model."""
    fail_on_error: StrictBool | StrictFloat | None = None
    """Inspect's ``fail_on_error``: true/false, a share of samples (below 1) or a count of samples."""
    retry_attempts: StrictInt | None = Field(default=None, ge=0)
    """How many times ``eval_set`` retries unfinished tasks."""
    log_format: Literal["eval", "json"] | None = None
    """Log file format."""
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    """New tokens per model call (the protocol's, else the model's own, when unset)."""
    temperature: StrictFloat | None = Field(default=None, ge=0)
    """Sampling temperature of every model call (0: greedy, so a night's replies repeat); the model's own when
    unset."""


@config_dataclass(frozen=True, error=SuiteError)
class Checkpoint:
    """A model under evaluation: any Inspect model string (``openai/…``, ``hf/…``, ``local/…``) plus model roles."""

    name: Name
    """The checkpoint's name in tables and comparisons."""
    model: Name
    """The Inspect model string."""
    model_args: dict[str, Any] = Field(default_factory=dict)
    """``-M`` model arguments."""
    roles: dict[str, Name] = Field(default_factory=dict)
    """Model roles (``grader``, ``verifier``, …) bound to other Inspect model strings."""

    @field_validator("model_args")
    @classmethod
    def _no_credentials(cls, model_args: dict[str, Any]) -> dict[str, Any]:
        """Inspect records ``-M`` arguments (``base_url`` ...) in every eval log, so none may carry a credential."""
        for name, value in model_args.items():
            problem = credential_problem(value) if isinstance(value, str) else None
            if problem:
                raise ConfigProblem(name, problem)
        return model_args


@config_dataclass(frozen=True, error=SuiteError)
class SuiteTask:
    """A task spec (``file.py@function`` or ``package.module:function``) with its ``-T`` args, systems, protocols."""

    task: Name
    """``path/to/file.py@task_name`` or ``package.module:task_name``."""
    name: Name = ""
    """The task's name in tables (default: the task function's name)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """``-T`` task arguments (not ``system`` or ``protocol``: list those under ``systems``/``protocols``)."""
    systems: tuple[Name | None, ...] = (None,)
    """Systems to run the task with; empty or ``null`` means the task function's own default."""
    protocols: tuple[Name | None, ...] = (None,)
    """Protocols to score the task with; empty or ``null`` means the task function's own default."""

    @model_validator(mode="before")
    @classmethod
    def _name_defaults_to_the_function(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" not in data and isinstance(data.get("task"), str):
            return {**data, "name": data["task"].rsplit("@", 1)[-1].rsplit(":", 1)[-1]}
        return data

    @field_validator("task")
    @classmethod
    def _task_spec(cls, spec: str) -> str:
        if "@" not in spec and ":" not in spec:
            raise ConfigProblem(
                "",
                f"{spec!r} names no task function",
                "write 'path/to/file.py@task_name' or 'package.module:task_name'",
            )
        return spec

    @field_validator("args")
    @classmethod
    def _no_system_or_protocol_in_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        for reserved in ("system", "protocol"):
            if reserved in args:
                raise ConfigProblem(
                    reserved, "not an arg here", f"set '{reserved}' with '{reserved}s: [...]'"
                )
        return args

    @field_validator("systems", "protocols", mode="before")
    @classmethod
    def _names_or_default(cls, names: Any) -> Any:
        """A list of names (``null`` entries dropped), or ``(None,)``: the task function's own default."""
        if isinstance(names, list | tuple):
            return tuple(name for name in names if name is not None) or (None,)
        return names

    @field_validator("systems")
    @classmethod
    def _known_systems(cls, systems: tuple[str | None, ...]) -> tuple[str | None, ...]:
        from mara_bench.harness.systems import SYSTEMS

        return _known_names(systems, SYSTEMS, "system")

    @field_validator("protocols")
    @classmethod
    def _known_protocols(cls, protocols: tuple[str | None, ...]) -> tuple[str | None, ...]:
        from mara_bench.harness.protocols import PROTOCOLS

        return _known_names(protocols, PROTOCOLS, "protocol")


@config_dataclass(frozen=True, error=SuiteError)
class PairComparison:
    """Compare ``candidate`` against ``baseline`` on every task/system/protocol both ran in the same night."""

    candidate: Name
    """The checkpoint compared."""
    baseline: Name
    """The checkpoint it is compared against."""


@config_dataclass(frozen=True, error=SuiteError)
class CrossSolver:
    """MarsRL Table 3: rows = solver checkpoints, columns = solver alone vs system per task."""

    checkpoints: tuple[Name, ...] = Field(min_length=1)
    """The solver checkpoints (rows)."""
    tasks: tuple[Name, ...] = Field(min_length=1)
    """The tasks (column groups)."""
    system: Name = "vc"
    """The system whose run is compared with its solver alone."""
    alone_score: Name = "solver"
    """The named answer scored as *solver alone* in the system's own run (the judges record it as
    ``<judge>_<alone_score>``, e.g. ``math_solver``)."""


@config_dataclass(frozen=True, error=SuiteError)
class RoleMatrix:
    """Which role made the difference: every combination of each role's model variants, on the same samples.

    ``roles: {planner: {base: M1, trained: M2}, worker: {base: M3, trained: M4}}`` runs the four combinations of
    ``task`` under ``system``; each role's first variant is its baseline, and the site compares every combination
    with the all-baseline one (paired difference and 95% CI), with tokens and cost per role.
    """

    task: Name
    """A task declared under ``tasks``."""
    system: Name
    """The multi-agent system whose roles the variants serve."""
    roles: dict[Name, dict[Name, Name]] = Field(min_length=1)
    """Role -> {variant name: Inspect model string}; the first variant of each role is its baseline."""
    protocol: Name | None = None
    """The protocol (the task function's own default when unset)."""
    model: Name | None = None
    """The evaluated model, serving any role the matrix does not bind (default: the first role's baseline)."""
    checkpoint: Name | None = None
    """The suite checkpoint whose other roles (the ``grader`` of an LLM judge, ...) every combination binds as that
    checkpoint's own runs do (default: the first checkpoint)."""

    @field_validator("roles")
    @classmethod
    def _two_variants_or_more(cls, roles: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for role, variants in roles.items():
            if len(variants) < 2:
                raise ConfigProblem(role, "needs at least two variants", "e.g. {base: MODEL, trained: MODEL}")
        return roles

    @field_validator("system")
    @classmethod
    def _known_system_with_those_roles(cls, system: str) -> str:
        from mara_bench.harness.systems import SYSTEMS

        _known_names((system,), SYSTEMS, "system")
        return system

    @model_validator(mode="after")
    def _roles_of_the_system(self) -> RoleMatrix:
        from mara_bench.harness.systems import SYSTEMS

        known = SYSTEMS[self.system].roles
        for role in self.roles:
            if role not in known:
                raise ConfigProblem(
                    f"roles.{role}",
                    f"system {self.system!r} has no role {role!r}",
                    f"{did_you_mean(role, known)}its roles: {', '.join(known)}",
                )
        return self

    def combinations(self) -> list[dict[str, str]]:
        """Every combination as {role: variant}, the all-baseline one first."""
        combos: list[dict[str, str]] = [{}]
        for role, variants in self.roles.items():
            combos = [{**combo, role: variant} for combo in combos for variant in variants]
        return combos

    def baseline(self) -> dict[str, str]:
        return {role: next(iter(variants)) for role, variants in self.roles.items()}

    @staticmethod
    def label(combination: dict[str, str]) -> str:
        """The combination's checkpoint name in tables: ``planner=trained, worker=base``."""
        return ", ".join(f"{role}={variant}" for role, variant in combination.items())

    def bound(self, combination: dict[str, str], kept: Checkpoint) -> Checkpoint:
        """The combination as a checkpoint: each role bound to its variant's model, every other role of ``kept``
        (the suite checkpoint named by ``checkpoint``) bound as ``kept`` binds it."""
        roles = {**kept.roles, **{role: self.roles[role][variant] for role, variant in combination.items()}}
        first_role = next(iter(self.roles))
        model = self.model or self.roles[first_role][self.baseline()[first_role]]
        return Checkpoint(name=self.label(combination), model=model, roles=roles)


@config_dataclass(frozen=True, error=SuiteError)
class ToolPin:
    """The tool responses every tool-using run of the suite sees (``mara_bench.harness.toolcache``): a pinned snapshot."""

    snapshot: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
    """The snapshot (``-T tool_snapshot``); freeze it (``mara tools freeze``) so every night sees the same pages."""
    cache: Literal["replay", "replay-or-record", "record"] = "replay"
    """``-T tool_cache``: ``replay`` (the default) never touches the network."""
    store: StrictStr | None = None
    """``-T tool_store`` (default: ``MARA_TOOL_STORE``, else ``~/.cache/mara-bench/tool-store``)."""

    @field_validator("store")
    @classmethod
    def _no_credentials(cls, store: str | None) -> str | None:
        """Every run's log records ``-T tool_store``: the store's credentials go through ``MARA_TOOL_STORE``."""
        problem = credential_problem(store) if store else None
        if problem:
            raise ConfigProblem("", problem)
        return store

    def task_args(self) -> dict[str, str]:
        """The ``-T`` settings that pin the snapshot."""
        pinned = {"tool_cache": self.cache, "tool_snapshot": self.snapshot}
        return {**pinned, "tool_store": self.store} if self.store else pinned


@config_dataclass(frozen=True, error=SuiteError)
class Settings:
    """Statistics and eval options for the whole suite."""

    alpha: StrictFloat = Field(default=0.05, gt=0, lt=1)
    """Significance level of the comparisons."""
    correction: Literal["holm", "bh"] = "holm"
    """Multiple-comparison correction: ``holm`` (family-wise) or ``bh`` (false discovery rate)."""
    min_effect: StrictFloat = Field(default=0.0, ge=0)
    """Smallest score difference reported as a change."""
    fail_on: Literal["any", "confirmed"] = "any"
    """Which regressions make ``mara nightly`` exit 1: ``any``, or only ``confirmed`` ones (an LLM-judged drop that
    the second grader's verdicts show too, or a drop scored by a deterministic judge). Give LLM-judged tasks a
    second grader with ``args: {second_grader: MODEL}``."""
    eval: dict[str, Any] = Field(default_factory=dict)
    """``eval_set`` options (``EvalOptions``), only those given."""
    tools: ToolPin | None = None
    """A tool snapshot every run of a tool-using system is pinned to (a task's own ``args`` may override it)."""

    @field_validator("eval", mode="before")
    @classmethod
    def _eval_options(cls, options: Any) -> Any:
        if isinstance(options, dict):
            ConfigProblem.check(EvalOptions, options)
        return {} if options is None else options


@config_dataclass(frozen=True, error=SuiteError)
class Suite:
    name: Name
    """The suite's name (the leaderboard's title)."""
    checkpoints: tuple[Checkpoint, ...] = Field(min_length=1)
    """The models under evaluation."""
    tasks: tuple[SuiteTask, ...] = Field(min_length=1)
    """The tasks each checkpoint runs."""
    comparisons: tuple[PairComparison, ...] = ()
    """Checkpoint pairs compared each night."""
    cross_solver: CrossSolver | None = None
    """The MarsRL Table 3 view, if wanted."""
    role_matrix: RoleMatrix | None = None
    """Every combination of role variants on one task (which role made the difference), if wanted."""
    settings: Settings = Field(default_factory=Settings)
    """Statistics and eval options."""
    description: StrictStr = ""
    """Free text shown on the leaderboard."""
    source: Path | None = Field(default=None, init=False)
    """The file the suite was loaded from (set by ``load_suite``, never read from the file)."""

    @model_validator(mode="after")
    def _names_are_unique_and_declared(self) -> Suite:
        for section in ("checkpoints", "tasks"):
            names = [item.name for item in getattr(self, section)]
            duplicates = sorted({name for name in names if names.count(name) > 1})
            if duplicates:
                raise ConfigProblem(
                    section,
                    f"duplicate name(s) {', '.join(map(repr, duplicates))}",
                    "give each a unique name",
                )
        checkpoints = [c.name for c in self.checkpoints]
        tasks = [t.name for t in self.tasks]
        for i, pair in enumerate(self.comparisons):
            for key in ("candidate", "baseline"):
                _declared(getattr(pair, key), checkpoints, f"comparisons[{i}].{key}", "checkpoint")
        if self.role_matrix is not None:
            _declared(self.role_matrix.task, tasks, "role_matrix.task", "task")
            if self.role_matrix.checkpoint is not None:
                _declared(self.role_matrix.checkpoint, checkpoints, "role_matrix.checkpoint", "checkpoint")
        if self.cross_solver is not None:
            for name in self.cross_solver.checkpoints:
                _declared(name, checkpoints, "cross_solver.checkpoints", "checkpoint")
            for name in self.cross_solver.tasks:
                _declared(name, tasks, "cross_solver.tasks", "task")
        return self

    def checkpoint(self, name: str) -> Checkpoint:
        return next(c for c in self.checkpoints if c.name == name)


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite YAML file."""
    return parse_suite(load_yaml(path, SuiteError), source=Path(path))


def parse_suite(raw: Any, source: Path | None = None) -> Suite:
    """Validate a suite given as parsed YAML (a mapping)."""
    suite = validate(Suite, raw, str(source) if source else "suite", SuiteError)
    object.__setattr__(suite, "source", source)  # frozen, and not a key of the file
    return suite


def _known_names(names: tuple[str | None, ...], known: dict[str, Any], kind: str) -> tuple[str | None, ...]:
    for name in names:
        if name is not None and name not in known:
            raise ConfigProblem(
                "",
                f"unknown {kind} {name!r}",
                f"{did_you_mean(name, known)}known {kind}s: {', '.join(known)}",
            )
    return names


def _declared(name: str, declared: list[str], key: str, kind: str) -> None:
    if name not in declared:
        raise ConfigProblem(
            key,
            f"unknown {kind} {name!r}",
            f"{did_you_mean(name, declared)}declared: {', '.join(sorted(declared))}",
        )
