"""``mara tasks`` lists what the code accepts, and a mistyped ``-T`` name is answered with the closest valid one,
task parameters included."""

from __future__ import annotations

import inspect

import pytest
from inspect_ai.util import registry_info

from mara_bench.catalog import BENCHMARKS, TASK_FILES, get_benchmark
from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.cli import main as mara
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.prompts.sets import prompt_sets
from mara_bench.harness.systems import SYSTEMS
from mara_bench.harness.systems.options import option_names
from mara_bench.harness.task_arguments import TASK_PARAMETER_NAMES


def _task_function(name: str):
    """The task function ``name`` of the task file that declares it."""
    (function,) = [getattr(module, name) for module in TASK_FILES if hasattr(module, name)]
    return function


def _listed_names(lines: list[str], heading: str) -> list[str]:
    """The first word of each indented line under ``heading`` up to the next blank line."""
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 1
    names = []
    for line in lines[start:]:
        if not line.strip():
            break
        names.append(line.split()[0])
    return names


def test_mara_tasks_lists_every_benchmark_task(capsys):
    assert mara(["tasks"]) == 0
    listed = [
        line.split()[0] for line in capsys.readouterr().out.splitlines() if line and not line[0].isspace()
    ]
    assert set(BENCHMARKS) <= set(listed)
    assert listed[: len(BENCHMARKS)] == sorted(BENCHMARKS)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_tasks_listed_parameters_equal_what_its_task_function_accepts(name, capsys):
    task_function = _task_function(name)
    accepted = [
        p.name
        for p in inspect.signature(task_function).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    assert mara(["tasks", name]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert _listed_names(lines, "task parameters") == accepted == list(TASK_PARAMETER_NAMES)
    assert registry_info(task_function).metadata["params"][: len(accepted)] == accepted


def test_mara_tasks_lists_each_systems_own_options(capsys):
    assert mara(["tasks", "aime2025"]) == 0
    listed: dict[str, list[str]] = {}
    system = None
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("  ") and not line.startswith("    ") and "  roles: " in line:
            system = line.split()[0]
            listed[system] = []
        elif system and line.startswith("    ") and not line.lstrip().startswith(("+", "(")):
            listed[system].append(line.split()[0])
        elif not line.strip():
            system = None
    assert listed == {name: option_names(spec.run) for name, spec in SYSTEMS.items()}


def test_mara_tasks_shows_each_systems_prompt_sets_from_the_registry(capsys):
    assert mara(["tasks", "aime2025"]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        if "  roles: " in line:
            system = line.split()[0]
        elif line.lstrip().startswith("prompts "):
            rows[system] = line
    assert set(rows) == {name for name in SYSTEMS if prompt_sets(name)} == {"mars", "matpo", "mask", "vc"}
    for system, row in rows.items():
        assert all(f"'{name}'" in row for name in prompt_sets(system)), row
        assert row.endswith(f"sets in harness/prompts/{system}/; ours, not the paper's: compact"), row


def test_an_unknown_task_name_suggests_the_closest(capsys):
    with pytest.raises(SystemExit, match="did you mean 'aime2025'"):
        mara(["tasks", "aime205"])


@pytest.mark.parametrize(
    ("typo", "meant"), [("protocl", "protocol"), ("limt", "limit"), ("accept_afer", "accept_after")]
)
def test_a_mistyped_option_suggests_the_task_parameter_or_system_option_meant(typo, meant):
    with pytest.raises(ConfigError, match=f"did you mean '{meant}'") as error:
        evaluation_task(get_benchmark("aime2025"), data="samples", system="vc", **{typo: "2"})
    assert "task parameters: system, protocol" in str(error.value)
    assert "system 'vc' options: accept_after" in str(error.value)


def test_every_task_parameter_reaches_the_task():
    task = evaluation_task(
        get_benchmark("aime2025"), data="samples", limit=2, epochs=2, reducers="avg,pass@1", breakdown=[]
    )
    assert len(task.dataset) == 2
    assert task.epochs == 2
