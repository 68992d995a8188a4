"""The sandboxed python tool, isolated by bubblewrap or not: normal code runs; loops, memory bombs and floods are
stopped with a ToolError the agent can read. With ``unisolated`` (its in-process guard) sockets, processes and
writes outside the working directory are refused; what bubblewrap stops is in ``test_python_isolation``."""

from __future__ import annotations

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools.python_sandbox import SandboxLimits, run_python

LIMITS = SandboxLimits(timeout=5, memory_mb=400, max_output=2000)


async def test_normal_script_prints_its_result(isolation):
    assert (
        await run_python(
            "import math\nprint(math.comb(10, 3))\nprint(sum(range(101)))", LIMITS, isolation=isolation
        )
        == "120\n5050"
    )


async def test_files_inside_the_working_directory_are_allowed(isolation):
    code = "open('notes.txt', 'w').write('abc')\nimport os\nprint(sorted(os.listdir('.')), open('notes.txt').read())"
    assert await run_python(code, LIMITS, isolation=isolation) == "['main.py', 'notes.txt'] abc"


async def test_stderr_is_shown_after_stdout(isolation):
    output = await run_python(
        "import sys\nprint('out')\nprint('warn', file=sys.stderr)", LIMITS, isolation=isolation
    )
    assert output == "out\n[stderr]\nwarn"


async def test_infinite_loop_is_killed_at_the_time_limit(isolation):
    with pytest.raises(
        ToolError, match=r"stopped after the 1 s time limit \(python_timeout\); output so far:\nstarted"
    ):
        await run_python(
            "print('started', flush=True)\nwhile True:\n    pass",
            SandboxLimits(timeout=1),
            isolation=isolation,
        )


async def test_an_output_flood_in_a_loop_is_killed_with_its_output_capped(isolation):
    limits = SandboxLimits(timeout=2, max_output=50)
    with pytest.raises(ToolError) as caught:
        await run_python("while True:\n    print('x' * 100)", limits, isolation=isolation)
    assert str(caught.value) == (
        "python: stopped after the 2 s time limit (python_timeout); output so far:\n"
        + "x" * 50
        + "\n[output cut at 50 characters (python_max_output)]"
    )


async def test_memory_bomb_hits_the_memory_limit(isolation):
    with pytest.raises(ToolError, match=r"exceeded the memory limit of 400 MiB \(python_memory_mb\)"):
        await run_python(
            "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))", LIMITS, isolation=isolation
        )


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)", "network access is disabled"),
        (
            "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/')",
            "network access is disabled",
        ),
        ("import socket\nsocket.getaddrinfo('example.com', 80)", "network access is disabled"),
        ("import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM)", "network access is disabled"),
        (
            "import asyncio\nasyncio.run(asyncio.open_connection('127.0.0.1', 9))",
            "network access is disabled",
        ),
        ("import subprocess\nsubprocess.run(['echo', 'hi'])", "starting processes is disabled"),
        ("import os\nos.system('echo hi')", "starting processes is disabled"),
    ],
)
async def test_network_and_processes_are_refused(code, reason):
    with pytest.raises(ToolError, match=f"python sandbox: {reason}"):
        await run_python(code, LIMITS, isolation="unisolated")


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("open({target!r}, 'w').write('x')", "writing outside the working directory"),
        ("open({kept!r}, 'a').write('x')", "writing outside the working directory"),
        ("import os\nos.open({target!r}, os.O_WRONLY | os.O_CREAT)", "writing outside the working directory"),
        ("import pathlib\npathlib.Path({target!r}).write_text('x')", "writing outside the working directory"),
        ("import shutil\nshutil.copy('main.py', {target!r})", "writing outside the working directory"),
        ("import os\nos.makedirs({target!r} + '/sub')", "changing files outside the working directory"),
        ("import os\nos.remove({kept!r})", "changing files outside the working directory"),
        ("import os\nos.rename({kept!r}, 'stolen.txt')", "changing files outside the working directory"),
        (
            "import os\nopen('new', 'w').write('x')\nos.replace('new', {kept!r})",
            "changing files outside the working directory",
        ),
        (  # a link inside the directory pointing out of it is refused when it is made
            "import os\nos.symlink({kept!r}, 'link')\nopen('link', 'w').write('x')",
            "changing files outside the working directory",
        ),
    ],
)
async def test_writing_outside_the_working_directory_is_refused(tmp_path, code, reason):
    target, kept = tmp_path / "escape.txt", tmp_path / "kept.txt"
    kept.write_text("precious")
    with pytest.raises(ToolError, match=f"python sandbox: {reason} is not allowed: "):
        await run_python(code.format(target=str(target), kept=str(kept)), LIMITS, isolation="unisolated")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept.txt"]
    assert kept.read_text() == "precious"


async def test_exceptions_come_back_with_the_agents_traceback_only(isolation):
    with pytest.raises(ToolError) as caught:
        await run_python("x = 1\ny = x / 0", LIMITS, isolation=isolation)
    message = str(caught.value)
    assert message.startswith("python: the code raised an error (exit status 1)")
    assert "ZeroDivisionError: division by zero" in message
    assert "main.py" in message and "sandbox_child" not in message


async def test_output_is_capped_keeping_the_head_of_stdout_and_the_tail_of_stderr(isolation):
    limits = SandboxLimits(max_output=5)
    assert (
        await run_python("print('abcdefghij' * 10000)", limits, isolation=isolation)
        == "abcde\n[output cut at 5 characters (python_max_output)]"
    )
    with pytest.raises(ToolError) as caught:
        await run_python("raise ValueError('x' * 50 + 'END')", limits, isolation=isolation)
    assert str(caught.value).endswith("[output cut at 5 characters (python_max_output)]\nxxEND")


async def test_empty_code_is_a_tool_error(isolation):
    with pytest.raises(ToolError, match="must be non-empty Python source"):
        await run_python("   ", LIMITS, isolation=isolation)
