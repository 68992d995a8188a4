"""Choosing the python tool's isolation: bwrap is checked when the toolbox is built (missing or unable to create
namespaces: one message naming the Debian package and the opt-out), ``unisolated`` warns once, and ``inspect``
runs the code in the sample's Inspect sandbox (here Inspect's ``local`` one) or says how to give it one."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.harness.tools import ToolConfigError, build_toolbox, bwrap, python_sandbox

REFUSAL = (
    "tool 'python' isolates code with bubblewrap, but {problem}: install the Debian package bubblewrap "
    "(apt-get install bubblewrap), or run code without isolation with -T python_sandbox=unisolated"
)


@pytest.fixture
def fresh_bwrap_check():
    bwrap.unavailable_reason.cache_clear()
    yield
    bwrap.unavailable_reason.cache_clear()


def test_missing_bwrap_is_refused_at_build_time_naming_the_package(monkeypatch, fresh_bwrap_check):
    monkeypatch.setattr(bwrap, "BWRAP", "bwrap-not-installed")
    with pytest.raises(ToolConfigError) as caught:
        build_toolbox(["python"])
    assert str(caught.value) == REFUSAL.format(problem="bwrap-not-installed is not installed")


def test_bwrap_that_cannot_create_namespaces_is_refused_with_its_reason(
    tmp_path, monkeypatch, fresh_bwrap_check
):
    denied = tmp_path / "bwrap"
    denied.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    denied.chmod(0o755)
    monkeypatch.setattr(bwrap, "BWRAP", str(denied))
    with pytest.raises(ToolConfigError) as caught:
        build_toolbox(["python"])
    assert str(caught.value) == (
        f"tool 'python' isolates code with bubblewrap, but {denied} could not start {sys.executable} in a "
        "sandbox (bwrap: No permissions to create new namespace); to run code without isolation, use "
        "-T python_sandbox=unisolated"
    )


async def test_unisolated_runs_without_bwrap_and_warns_once(monkeypatch, caplog, fresh_bwrap_check):
    monkeypatch.setattr(bwrap, "BWRAP", "bwrap-not-installed")
    python_sandbox.warn_unisolated.cache_clear()
    with caplog.at_level(logging.WARNING, logger=python_sandbox.__name__):
        toolboxes = [build_toolbox(["python"], python_sandbox="unisolated") for _ in range(3)]
    assert await toolboxes[0].call("python", code="print(6 * 7)") == "42"
    [warning] = caplog.records
    assert "python_sandbox=unisolated runs agent code on this machine" in warning.getMessage()


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
async def test_bwrap_states_the_protection_in_force_when_built_and_from_its_first_call(monkeypatch, caplog):
    monkeypatch.setattr(python_sandbox.call_cgroup, "parents", lambda: None)  # as on a machine without one
    monkeypatch.setattr(python_sandbox.bwrap, "drops_root", lambda: False)
    python_sandbox.protection_line.cache_clear()
    python_sandbox._state_protection_once.cache_clear()
    with caplog.at_level(logging.WARNING, logger=python_sandbox.__name__):
        toolbox = build_toolbox(["python"])
        await toolbox.call("python", code="print(1)")
        await toolbox.call("python", code="print(2)")
    python_sandbox.protection_line.cache_clear()
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2  # built, first call
    assert lines[0] == lines[1]
    assert lines[0].startswith(
        "python tool isolation: bubblewrap, code as uid 65534 in its own user namespace; "
    )
    assert "; NO per-call cgroup (no writable, delegated cgroup here): " in lines[0]


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
async def test_a_fully_protected_sandbox_states_it_below_warning_level(monkeypatch, caplog):
    monkeypatch.setattr(python_sandbox.bwrap, "degraded", lambda cgroups: False)  # every protection in force
    python_sandbox._state_protection_once.cache_clear()
    with caplog.at_level(logging.INFO, logger=python_sandbox.__name__):
        toolbox = build_toolbox(["python"])
        assert await toolbox.call("python", code="print(1)") == "1"
    levels = [record.levelno for record in caplog.records if "python tool isolation" in record.getMessage()]
    assert levels == [logging.INFO, logging.INFO]  # built, first call: recorded, never a console warning


def test_an_unknown_sandbox_is_a_build_error():
    with pytest.raises(
        ToolConfigError,
        match="python_sandbox: 'docker' is not a valid choice; choose one of bwrap, unisolated, inspect",
    ):
        build_toolbox(["python"], python_sandbox="docker")


def agent(messages, config) -> str:  # noqa: ARG001
    if len(messages) == 2:
        call = {
            "name": "python",
            "arguments": {"code": "import os\nprint(6 * 7, os.getcwd())"},
            "purpose": "x",
        }
        return f"<think>Compute.</think><tool_call>{json.dumps(call)}</tool_call>"
    return "<think>Done.</think><answer>\\boxed{42}</answer>"


@pytest.mark.parametrize("sandbox", ["local", None])
def test_inspect_mode_runs_the_code_in_the_samples_sandbox(tmp_path, bm25_index, sandbox):
    task = Task(
        dataset=[Sample(id="q", input="what is 6*7?", target="42")],
        solver=system_solver(
            get_system("react").setup(
                dict(index=str(bm25_index), python_sandbox="inspect", python_executable="python3")
            )
        ),
        sandbox=sandbox,
    )
    [log] = eval(task, model=scripted_model(agent), log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success"
    [tool_call] = stored_episode(log.samples[0].store).tool_calls
    if sandbox == "local":
        assert tool_call.error is None
        number, cwd = tool_call.output.split()
        assert number == "42" and "/tmp/mara-python-" in cwd
    else:
        assert tool_call.error == (
            "python: python_sandbox=inspect needs a sandbox for the sample; run the eval with --sandbox docker "
            "(or give the task a sandbox), or choose -T python_sandbox=bwrap"
        )
