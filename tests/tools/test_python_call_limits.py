"""One python call's memory, processes and scratch space are bounded as a whole, not per process: code that forks
past each limit (three children each holding most of the memory limit, 600 processes, 1.2 GiB written across
its folder, ``/tmp`` and ``/dev/shm``) is stopped. Where the machine lacks the mechanism the test is skipped and
says which one."""

from __future__ import annotations

import sys

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import bwrap, call_cgroup
from mara_bench.harness.tools.python_sandbox import SandboxLimits, run_python

pytestmark = pytest.mark.skipif(
    bwrap.unavailable_reason(sys.executable) is not None,
    reason=f"bubblewrap cannot run here: {bwrap.unavailable_reason(sys.executable)}",
)

THREE_CHILDREN = """
import os, time
children = []
for child in range(3):
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        block = bytearray(200 * 2**20)  # under the 256 MiB address-space limit of one process
        for page in range(0, len(block), 4096):
            block[page] = 1
        os.write(ready_write, b'x')
        time.sleep(60)
        os._exit(0)
    os.close(ready_write)
    os.read(ready_read, 1)  # the child holds its memory, or it died trying
    children.append(pid)
time.sleep(0.5)
print('children holding 200 MiB each:', sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children))
"""


@pytest.mark.skipif(
    call_cgroup.parents() is None,
    reason="no writable, delegated cgroup here: memory is capped per process only",
)
async def test_three_children_cannot_together_hold_more_than_the_memory_limit():
    limits = SandboxLimits(timeout=30, memory_mb=256)
    try:
        output = await run_python(THREE_CHILDREN, limits)
    except ToolError as error:
        output = str(error)
    assert "children holding 200 MiB each: 3" not in output


FORKS = """
import os, time
started = 0
try:
    for _ in range(600):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        started += 1
except OSError as error:
    print('refused:', type(error).__name__)
print('forked', started)
"""


async def test_600_forks_are_stopped_at_the_process_limit():
    limits = SandboxLimits(timeout=30, memory_mb=512, max_processes=64)
    output = await run_python(FORKS, limits)
    assert output.splitlines()[0] == "refused: BlockingIOError"  # EAGAIN: the process limit
    assert int(output.splitlines()[-1].split()[1]) < limits.max_processes


WRITE_EVERYWHERE = """
import os
written = 0
block = b'x' * 2**20
try:
    for index in range(1200):  # 1.2 GiB in 16 MiB files, round the three writable places
        place = ['/sandbox', '/tmp', '/dev/shm'][index // 16 % 3]
        with open(f'{place}/fill-{index // 16}', 'ab') as handle:
            handle.write(block)
        written += 1
except OSError as error:
    print('refused:', error.strerror)
print('MiB written', written)
"""


@pytest.mark.skipif(not bwrap._sizes_tmpfs(), reason="this bwrap cannot size a tmpfs (bubblewrap before 0.8)")
async def test_writing_1_2_gib_is_stopped_within_the_scratch_space():
    limits = SandboxLimits(timeout=60, memory_mb=300)
    try:
        output = await run_python(WRITE_EVERYWHERE, limits)
    except ToolError as error:  # the call's cgroup counts tmpfs pages as its memory
        assert str(error).startswith("python: exceeded the memory limit of 300 MiB")
        return
    assert output.splitlines()[0] == "refused: No space left on device"
    assert int(output.splitlines()[-1].split()[-1]) <= limits.memory_mb
