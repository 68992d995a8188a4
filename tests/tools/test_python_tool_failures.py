"""Nothing agent code does fails the call with anything but a ``ToolError``: a directory tree 3,000 deep (deeper
than ``shutil.rmtree``'s recursion and ``PATH_MAX``) is removed after the call without a trace, a failure inside
the harness reaches the agent as a ``ToolError`` and the log, and an interpreter installed under ``/tmp`` runs
under bubblewrap (its binds are not hidden by the sandbox's fresh ``/tmp``)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import bwrap, cleanup_tree, python_sandbox
from mara_bench.harness.tools.python_sandbox import SandboxLimits, run_python

LIMITS = SandboxLimits(timeout=30, memory_mb=400)
DEEP_TREE = """
import os
here = os.open('.', os.O_RDONLY)
for _ in range(3000):
    os.mkdir('d', dir_fd=here)
    below = os.open('d', os.O_RDONLY, dir_fd=here)
    os.close(here)
    here = below
os.close(os.open('bottom.txt', os.O_WRONLY | os.O_CREAT, dir_fd=here))
os.fchmod(here, 0o500)  # not writable: removal must open it up first
print('built')
"""


def _call_folders() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("mara-python-")}


@pytest.mark.parametrize("isolation", ["unisolated", "bwrap"])
async def test_a_3000_deep_tree_is_removed_after_the_call_without_error(isolation):
    if isolation == "bwrap" and bwrap.unavailable_reason(sys.executable):
        pytest.skip(f"bubblewrap cannot run here: {bwrap.unavailable_reason(sys.executable)}")
    before = _call_folders()
    assert await run_python(DEEP_TREE, LIMITS, isolation=isolation) == "built"
    assert _call_folders() == before


def test_remove_tree_never_raises_and_logs_what_it_could_not_remove(tmp_path, caplog):
    top = tmp_path / "tree"
    deep = top
    for _ in range(50):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "file").write_text("x")
    (top / "link").symlink_to(tmp_path)  # removed, not followed
    cleanup_tree.remove_tree(str(top))
    assert not top.exists()
    assert tmp_path.exists()
    with caplog.at_level(logging.WARNING, logger=cleanup_tree.__name__):
        cleanup_tree.remove_tree("/proc/self/mara-not-removable")  # nothing there: silently nothing to do
        cleanup_tree.remove_tree("/proc/self/fd")  # a tree the kernel will not let anyone remove
    assert any("could not remove" in record.getMessage() for record in caplog.records)


async def test_a_failure_inside_the_harness_reaches_the_agent_as_a_tool_error_and_the_log(
    monkeypatch, caplog
):
    def broken(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(python_sandbox, "_child_environment", broken)
    before = _call_folders()
    with (
        caplog.at_level(logging.ERROR, logger=python_sandbox.__name__),
        pytest.raises(ToolError, match=r"^python: the tool failed \(RecursionError: maximum recursion"),
    ):
        await run_python("print(1)", LIMITS, isolation="unisolated")
    assert "python tool: the call failed in the harness" in caplog.text
    assert _call_folders() == before  # its folder was still removed


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
async def test_an_interpreter_installed_under_tmp_runs_under_bubblewrap():
    with tempfile.TemporaryDirectory(prefix="mara-venv-", dir="/tmp") as place:
        venv = Path(place) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        assert bwrap.unavailable_reason(python) is None
        assert await run_python("import sys\nprint(sys.prefix)", LIMITS, executable=python) == str(venv)
