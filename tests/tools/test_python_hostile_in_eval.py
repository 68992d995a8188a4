"""Nothing an agent writes ends an eval: a real Inspect eval of the react system whose scripted agent's python
calls attack the machine (a tree 3,000 deep, 600 forks, three children past the memory limit, 1.2 GiB of
writes, the host's kernel settings, the harness's session keyring) under bubblewrap, and the deep tree under
``unisolated`` too. Every sample is scored, each call's result or tool error reaches the agent, and no call
folder is left in the temporary directory."""

from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.harness.tools import bwrap, call_cgroup
from mara_bench.judges.scorers import math_scorer
from tests.tools.test_python_tool_failures import DEEP_TREE

FORKS = """
import os, time
for started in range(600):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
print('forked 600')
"""
MEMORY = """
import os, time
children = []
for _ in range(3):
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        block = bytearray(200 * 2**20)
        for page in range(0, len(block), 4096):
            block[page] = 1
        os.write(ready_write, b'x')
        time.sleep(30)
    os.close(ready_write)
    os.read(ready_read, 1)
    children.append(pid)
time.sleep(0.5)
print('children holding 200 MiB:', sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children))
"""
DISK = """
block = b'x' * 2**20
for index in range(1200):
    with open(f"{['/sandbox', '/tmp', '/dev/shm'][index // 16 % 3]}/fill-{index // 16}", 'ab') as handle:
        handle.write(block)
print('wrote 1.2 GiB')
"""
SYSCTL = "open('/proc/sys/kernel/printk_ratelimit', 'w')\nprint('opened')"
KEYRING = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print('search', libc.syscall(250, 10, -3, b'user', b'mara-canary', 0), ctypes.get_errno())
"""
PROGRAMS = {
    "deep": DEEP_TREE,
    "forks": FORKS,
    "memory": MEMORY,
    "disk": DISK,
    "sysctl": SYSCTL,
    "keyring": KEYRING,
}


def agent(messages, config) -> str:  # noqa: ARG001
    if len(messages) == 2:
        code = PROGRAMS[messages[1].text.split(":")[0]]
        call = {"name": "python", "arguments": {"code": code}, "purpose": "attack"}
        return f"<think>Let me try.</think><tool_call>{json.dumps(call)}</tool_call>"
    return "<think>Done.</think><answer>\\boxed{42}</answer>"


def _call_folders() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("mara-python-")}


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
def test_hostile_python_calls_never_end_the_eval_and_leave_nothing_behind(tmp_path, bm25_index):
    def task(isolation: str, programs: list[str]) -> Task:
        return Task(
            dataset=[Sample(id=name, input=f"{name}: what is 6*7?", target="42") for name in programs],
            solver=system_solver(
                get_system("react").setup(
                    dict(
                        index=str(bm25_index),
                        python_timeout=20,
                        python_memory_mb=256,
                        python_sandbox=isolation,
                    )
                )
            ),
            scorer=math_scorer(),
            name=f"hostile-{isolation}",
        )

    before = _call_folders()
    logs = eval(
        [task("bwrap", list(PROGRAMS)), task("unisolated", ["deep"])],
        model=scripted_model(agent),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=2,
    )

    assert _call_folders() == before
    outcomes = {}
    for log in logs:
        assert log.status == "success"
        assert log.results.scores[0].metrics["accuracy"].value == 1.0
        for sample in log.samples:
            assert sample.error is None
            [tool_call] = stored_episode(sample.store).tool_calls
            outcomes[(log.eval.task, sample.id)] = tool_call.error or tool_call.output
    assert outcomes[("hostile-bwrap", "deep")] == "built"
    assert outcomes[("hostile-unisolated", "deep")] == "built"
    assert outcomes[("hostile-bwrap", "forks")].startswith("python: the code raised an error")
    assert "BlockingIOError" in outcomes[("hostile-bwrap", "forks")]
    if call_cgroup.parents() is not None:  # else memory is capped per process only
        assert outcomes[("hostile-bwrap", "memory")] in [f"children holding 200 MiB: {n}" for n in (0, 1)]
    assert outcomes[("hostile-bwrap", "disk")].startswith(
        ("python: exceeded the memory limit of 256 MiB", "python: the code raised an error")
    )
    assert "PermissionError" in outcomes[("hostile-bwrap", "sysctl")]
    assert outcomes[("hostile-bwrap", "keyring")] == "search -1 1"
