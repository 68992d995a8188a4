"""The python tool's child process lifecycle: a flood of output still being written while the child is killed
cannot hang the tool (asyncio only reports the exit once both pipes close), and a cancelled call kills its code
(here ``unisolated``, whose child's pid the host sees; ``test_python_isolation`` checks bubblewrap's)."""

from __future__ import annotations

import asyncio
import os

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import python_sandbox
from mara_bench.harness.tools.python_sandbox import SandboxLimits, run_python


async def test_a_flood_that_outlives_the_time_limit_does_not_hang_the_tool(monkeypatch, isolation):
    # The kill lands 0.5 s after the time limit, so the child keeps writing with nobody reading its output --
    # the moment a loaded machine can open; a pipe left unread then stops being read and never reports its end.
    kill_now = python_sandbox.kill_group
    monkeypatch.setattr(
        python_sandbox, "kill_group", lambda pid: asyncio.get_running_loop().call_later(0.5, kill_now, pid)
    )
    code = "import sys\nwhile True:\n    sys.stdout.write('x' * 4096)"
    with pytest.raises(ToolError, match=r"stopped after the 1 s time limit"):
        call = run_python(code, SandboxLimits(timeout=1, max_output=100), isolation=isolation)
        await asyncio.wait_for(call, timeout=30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_cancelled_call_kills_its_code(monkeypatch):
    pids: list[int] = []
    keep_output = python_sandbox._Stream.add

    def watch(stream, chunk, keep):  # the child prints its pid first
        pids.extend(int(token) for token in chunk.split() if token.isdigit())
        keep_output(stream, chunk, keep)

    monkeypatch.setattr(python_sandbox._Stream, "add", watch)
    code = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)"
    call = asyncio.ensure_future(run_python(code, SandboxLimits(timeout=60), isolation="unisolated"))
    for _ in range(500):
        if pids:
            break
        await asyncio.sleep(0.02)
    assert pids, "the child never started"
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(250):  # killed at once; gone once reaped
        if not _alive(pids[0]):
            break
        await asyncio.sleep(0.02)
    assert not _alive(pids[0])
