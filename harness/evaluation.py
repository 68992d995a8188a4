"""The one place an evaluation task is assembled: dataset × system × judge × protocol.

``evaluation_task`` validates every option first (protocol, epochs/reducers, judge, system and its
options, data selection) so that a bad ``-T`` value stops the run at task creation, before any sample runs, with a
message listing the valid values (one line under ``inspect eval``: ``mara_bench.harness.prerequisites``). The task's metadata
is a ``mara_bench.harness.task_metadata.TaskMetadata``: what was evaluated and how -- benchmark, source and its revision or
file sha256, row count, sha256 of the id list, a hash of the evaluated samples (``dataset_hash``), protocol, judge
and judge model, the tool cache (``tool_cache``: mode, store, snapshot and its id), and, for ``local/`` models, the
checkpoint each resolved to (``resolved_checkpoint`` for the evaluated model, ``resolved_role_checkpoints`` for
``--model-role`` ones: path, step, adapter, base, weights sha256; see ``mara_bench.harness.providers.provenance``) and which
model served each agent role (``role_models``; per-role tokens are in the ``accounting`` score).
"""

from __future__ import annotations

import re
from typing import Any

from inspect_ai import Task
from inspect_ai.model import Model, get_model, model_roles

from mara_bench.core.inspect_compat import PrerequisiteError, active_model
from mara_bench.core.named import lookup
from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.audit import audited_answers, human_verdict, load_audit
from mara_bench.harness.breakdowns import breakdown_keys, with_breakdowns
from mara_bench.harness.datasets import BenchmarkSpec, load_spec
from mara_bench.harness.prerequisites import one_line_errors
from mara_bench.harness.protocols import Protocol, get_protocol
from mara_bench.harness.providers.provenance import recorded
from mara_bench.harness.systems import SystemSpec, get_system, index_record, system_solver, tool_cache_summary
from mara_bench.harness.task_arguments import TASK_PARAMETER_NAMES, split_task_arguments
from mara_bench.harness.task_metadata import TaskMetadata, dataset_hash
from mara_bench.judges import registry as judges
from mara_bench.judges.grader import GRADER_ROLE, SECOND_GRADER_ROLE


def _judge_choice(
    benchmark_judge: str, protocol: Protocol, judge: str | None
) -> tuple[str, dict[str, Any], str | None]:
    """(judge name, judge options, default judge model): ``-T judge=`` beats the protocol, which beats the benchmark.

    The protocol's judge options and judge model apply only to the protocol's own judge.
    """
    name = judge or protocol.judge or benchmark_judge
    lookup(judges.JUDGES, name, "judge")
    if name == protocol.judge:
        return name, dict(protocol.judge_options), protocol.judge_model
    return name, {}, None


def _grader_roles(judge_name: str, judge_model: str | None) -> dict[str, Model] | None:
    """The protocol's judge model as the task's ``grader`` role, unless the eval already binds a grader."""
    if judge_model is None or "grader" in model_roles():
        return None
    try:
        return {"grader": get_model(judge_model)}
    except PrerequisiteError as error:
        reason = " ".join(re.sub(r"\[/?[a-z ]+\]", "", error.message).split())
        raise ValueError(
            f"the {judge_name!r} judge defaults to {judge_model}, which cannot be used here ({reason}); "
            f"set its API key, or pass --model-role grader=<model> to use another grader"
        ) from error


def _grader_name(task_roles: dict[str, Model] | None, role: str = GRADER_ROLE) -> str | None:
    """The grader the run will use: the eval's ``--model-role grader=`` binding, else the protocol's judge model."""
    bound = model_roles().get(role) or (task_roles or {}).get(role)
    return str(bound) if bound is not None else None


def _second_grader_roles(
    judge_name: str, uses_grader: bool, second_grader: str | None
) -> dict[str, Model] | None:
    """The ``grader2`` role of a second judge, or None without one: ``-T second_grader=MODEL`` or the eval's own
    ``--model-role grader2=MODEL`` (which wins). A second grader needs an LLM judge."""
    bound = SECOND_GRADER_ROLE in model_roles()
    if second_grader is None and not bound:
        return None
    if not uses_grader:
        raise ConfigError(
            f"second_grader: the {judge_name!r} judge asks no grader model, so there is nothing to judge twice; "
            f"use an LLM judge (-T judge=equivalence, hle, simpleqa) or drop the second grader"
        )
    return {} if bound else {SECOND_GRADER_ROLE: get_model(second_grader)}


def _checkpoint_records(
    task_roles: dict[str, Model] | None,
) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """What the run's ``local/`` models resolved to: the evaluated model's record and each role model's."""
    model = active_model()
    own = recorded(model.api) if model is not None else None
    roles = {**model_roles(), **(task_roles or {})}
    by_role = {
        role: record.as_dict()
        for role, bound in sorted(roles.items())
        if isinstance(bound, Model) and (record := recorded(bound.api)) is not None
    }
    return (own.as_dict() if own is not None else None), by_role


def _role_models(roles: tuple[str, ...], task_roles: dict[str, Model] | None) -> dict[str, str | None]:
    """Which model serves each agent role of the system: the eval's ``--model-role`` binding, else ``None`` (the
    evaluated model). With ``resolved_role_checkpoints`` (checkpoint hashes of ``local/`` models) a log says which
    model and weights played each role."""
    bound = {**(task_roles or {}), **model_roles()}
    return {role: str(bound[role]) if role in bound else None for role in roles}


def _system_options(
    system: SystemSpec, protocol: Protocol, options: dict[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The protocol's system settings the system accepts, overridden by the user's own ``-T`` system options;
    and the names of those the protocol set (its sampling ones yield to a setting the user typed at run time)."""
    accepted = set(system.options())
    settings = {key: value for key, value in protocol.system_settings.items() if key in accepted}
    return {**settings, **options}, tuple(sorted(set(settings) - set(options)))


NAMED_FILES_AND_MODELS = ("second_grader", "audit")
"""Task parameters that name a model or a file: given at all, they must name one (an empty one is a typo)."""


@one_line_errors
def evaluation_task(spec: BenchmarkSpec, **arguments: Any) -> Task:
    """An Inspect task evaluating a system on the benchmark ``spec`` (see the module docstring).

    ``arguments`` are the task parameters (``mara_bench.harness.task_arguments.TaskArguments``) and the system's
    options; a name that is neither is an error suggesting the closest of both.
    """
    for named in NAMED_FILES_AND_MODELS:
        if named in arguments and arguments[named] in (
            None,
            "",
        ):  # ``-T second_grader=``: YAML reads it as null
            raise ConfigError(f"{named}: given empty; name one (see `mara tasks`) or drop -T {named}=")
    task, system_options = split_task_arguments(arguments)
    system: SystemSpec = get_system(task.system)  # the one look-up: set up below and handed down
    judge_timeout = task.judge_timeout
    chosen = get_protocol(task.protocol or spec.protocol).with_overrides(
        epochs=task.epochs, reducers=task.reducers
    )
    effective_options, from_protocol = _system_options(system, chosen, system_options)
    setup = system.setup(effective_options, TASK_PARAMETER_NAMES)  # the one check of the -T names and values
    judge_name, judge_options, judge_model = _judge_choice(spec.judge, chosen, task.judge)
    if judge_timeout is not None:  # -T judge_timeout= (seconds per grader call) beats the protocol's
        if not judges.is_llm_judge(judge_name, **judge_options):
            raise ValueError(
                f"judge_timeout={judge_timeout!r}: the {judge_name!r} judge asks no grader model"
            )
        judge_options["timeout"] = judge_timeout
    if task.list_final_stop:  # -T list_final_stop=true: our GAIA leniency, off by default (official verdicts)
        if judge_name != "gaia":
            raise ValueError(
                f"list_final_stop=true is an option of the 'gaia' judge; this run's judge is {judge_name!r}"
            )
        judge_options["list_final_stop"] = True
    audit = load_audit(task.audit) if task.audit is not None else None
    if audit is not None and task.ids is not None:
        raise ConfigError("audit: the audit file chooses the samples; drop -T ids=")
    solver = (
        audited_answers(audit)
        if audit is not None
        else system_solver(
            setup,
            from_protocol=from_protocol,
            protocol_generate=chosen.generate.model_dump(exclude_none=True),
        )
    )
    tool_cache = tool_cache_summary(system, setup.tool_settings)
    headline = with_breakdowns(
        judges.get_judge(judge_name, **judge_options), breakdown_keys(spec.name, task.breakdown)
    )
    scorers = [headline] + [
        judges.get_judge(judge_name, **{**judge_options, "answer": answer}) for answer in system.answers
    ]
    uses_grader = judges.is_llm_judge(judge_name, **judge_options)
    task_roles = _grader_roles(judge_name, judge_model) if uses_grader else None
    judges.require_grader(judge_name, task_roles, **judge_options)
    second_roles = _second_grader_roles(judge_name, uses_grader, task.second_grader)
    if second_roles is not None:
        scorers.append(judges.get_judge(judge_name, **{**judge_options, "grader_role": SECOND_GRADER_ROLE}))
        task_roles = {**(task_roles or {}), **second_roles}
    if audit is not None:
        scorers.append(human_verdict(audit))
    ids = sorted(audit) if audit is not None else task.ids
    loaded = load_spec(
        spec,
        data=task.data,
        ids=ids,
        limit=task.limit,
        data_file=task.data_file,
        force_data=task.force_data,
    )
    resolved_checkpoint, resolved_role_checkpoints = _checkpoint_records(task_roles)
    metadata = TaskMetadata(
        dataset=loaded.provenance,
        dataset_hash=dataset_hash(loaded.dataset),
        system=system.name,
        system_options=effective_options,
        system_options_from_protocol=list(from_protocol),
        protocol=chosen.summary(),
        judge=judge_name,
        judge_options=judge_options,
        judge_model=_grader_name(task_roles) if uses_grader else None,
        second_judge_model=_grader_name(task_roles, SECOND_GRADER_ROLE) if second_roles is not None else None,
        role_models=_role_models(system.roles, task_roles),
        tool_cache=tool_cache,
        resolved_checkpoint=resolved_checkpoint,
        resolved_role_checkpoints=resolved_role_checkpoints,
        retrieval_index=index_record(system, setup.tool_settings),
    )
    return Task(
        name=spec.name,
        dataset=loaded.dataset,
        solver=solver,
        scorer=scorers,
        epochs=chosen.epochs_spec(),
        config=chosen.generate,
        model_roles=task_roles,
        metadata=metadata.data(),
    )
