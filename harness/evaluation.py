"""The one place an evaluation task is assembled: dataset × system × judge × protocol.

``benchmark_task`` validates every option first (benchmark, protocol, epochs/reducers, judge, system and its
options, data selection) so that a bad ``-T`` value stops the run at task creation, before any sample runs, with a
message listing the valid values (one line under ``inspect eval``: ``harness.prerequisites``). The task's metadata
records what was evaluated and how: benchmark, source and its revision or file sha256, row count, sha256 of the id
list, protocol, judge and judge model, and, for ``local/`` models, the checkpoint each resolved to
(``resolved_checkpoint`` for the evaluated model, ``resolved_role_checkpoints`` for ``--model-role`` ones: path,
step, adapter, base, weights sha256; see ``harness.providers.provenance``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.model import Model, get_model, model_roles

from harness.breakdowns import breakdown_keys, with_breakdowns
from harness.datasets import get_benchmark, load_benchmark
from harness.prerequisites import one_line_errors
from harness.protocols import Protocol, get_protocol
from harness.providers.provenance import recorded
from harness.systems import get_system, index_record, system_solver
from judges import registry as judges
from judges.inspect_compat import PrerequisiteError, active_model
from judges.named import lookup


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


def _grader_name(task_roles: dict[str, Model] | None) -> str | None:
    """The grader the run will use: the eval's ``--model-role grader=`` binding, else the protocol's judge model."""
    bound = model_roles().get("grader") or (task_roles or {}).get("grader")
    return str(bound) if bound is not None else None


def _checkpoint_records(task_roles: dict[str, Model] | None) -> dict[str, Any]:
    """What the run's ``local/`` models resolved to: the evaluated model's record and each role model's."""
    model = active_model()
    own = recorded(model.api) if model is not None else None
    roles = {**model_roles(), **(task_roles or {})}
    by_role = {
        role: record.as_dict()
        for role, bound in sorted(roles.items())
        if isinstance(bound, Model) and (record := recorded(bound.api)) is not None
    }
    return {
        "resolved_checkpoint": own.as_dict() if own is not None else None,
        "resolved_role_checkpoints": by_role,
    }


def _system_options(system: str, protocol: Protocol, options: dict[str, Any]) -> dict[str, Any]:
    """The protocol's system settings the system accepts, overridden by the user's own ``-T`` system options."""
    accepted = set(get_system(system).options())
    settings = {key: value for key, value in protocol.system_settings.items() if key in accepted}
    return {**settings, **options}


@one_line_errors
def benchmark_task(
    benchmark: str,
    *,
    system: str = "direct",
    protocol: str | None = None,
    judge: str | None = None,
    data: str | None = None,
    ids: str | int | Sequence[str | int] | None = None,
    limit: int | None = None,
    epochs: int | None = None,
    reducers: str | Sequence[str] | None = None,
    breakdown: str | Sequence[str] | None = None,
    judge_timeout: float | None = None,
    **system_options: Any,
) -> Task:
    """An Inspect task evaluating ``system`` on ``benchmark`` under ``protocol`` (see the module docstring)."""
    spec = get_benchmark(benchmark)
    chosen = get_protocol(protocol).with_overrides(epochs=epochs, reducers=reducers)
    judge_name, judge_options, judge_model = _judge_choice(spec.judge, chosen, judge)
    if judge_timeout is not None:  # -T judge_timeout= (seconds per grader call) beats the protocol's
        if not judges.is_llm_judge(judge_name, **judge_options):
            raise ValueError(
                f"judge_timeout={judge_timeout!r}: the {judge_name!r} judge asks no grader model"
            )
        judge_options["timeout"] = judge_timeout
    effective_options = _system_options(system, chosen, system_options)
    solver = system_solver(system, **effective_options)
    system_spec = get_system(system)
    headline = with_breakdowns(
        judges.get_judge(judge_name, **judge_options), breakdown_keys(spec.name, breakdown)
    )
    scorers = [headline] + [
        judges.get_judge(judge_name, **{**judge_options, "answer": answer}) for answer in system_spec.answers
    ]
    uses_grader = judges.is_llm_judge(judge_name, **judge_options)
    task_roles = _grader_roles(judge_name, judge_model) if uses_grader else None
    judges.require_grader(judge_name, task_roles, **judge_options)
    loaded = load_benchmark(spec.name, data=data, ids=ids, limit=limit)
    metadata = {
        "dataset": loaded.provenance,
        "system": system,
        "system_options": effective_options,
        "protocol": chosen.summary(),
        "judge": judge_name,
        "judge_options": judge_options,
        "judge_model": _grader_name(task_roles) if uses_grader else None,
        **_checkpoint_records(task_roles),
        "retrieval_index": index_record(system_spec, system_spec.split_options(effective_options)[1]),
    }
    return Task(
        name=spec.name,
        dataset=loaded.dataset,
        solver=solver,
        scorer=scorers,
        epochs=chosen.epochs_spec(),
        config=chosen.generate,
        model_roles=task_roles,
        metadata=metadata,
    )
