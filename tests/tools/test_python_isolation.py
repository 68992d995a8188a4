"""The python tool under bubblewrap against code that attacks the machine, one test per escape class that got
through the old in-process guard: reading the harness's API keys from /proc, raw libc sockets, writes outside
through ``dir_fd`` and sqlite ``file:`` URIs, processes started with ``_posixsubprocess.fork_exec``, signals to
the harness, and detached processes outliving the call. Each asserts the effect on the host (the key is not in
the output, nothing reached the listener, no file appeared, the processes live or are gone), not an error text.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import bwrap, seccomp_filter
from mara_bench.harness.tools.python_sandbox import SandboxLimits, run_python

pytestmark = pytest.mark.skipif(
    bwrap.unavailable_reason(sys.executable) is not None,
    reason=f"bubblewrap cannot run here: {bwrap.unavailable_reason(sys.executable)}",
)

LIMITS = SandboxLimits(timeout=10, memory_mb=400)
SECRET = "sk-canary-" + uuid.uuid4().hex


@pytest.fixture
def secret_in_environment(monkeypatch) -> str:
    """An API key in the harness's environment, as on a machine that runs evals."""
    monkeypatch.setenv("SERPER_API_KEY", SECRET)
    return SECRET


READ_EVERY_ENVIRON = """
import os
pids = sorted(int(name) for name in os.listdir('/proc') if name.isdigit())
print('pids', pids)
for pid in pids + [os.getppid(), 'self']:
    try:
        print(pid, open(f'/proc/{pid}/environ', 'rb').read())
    except OSError as error:
        print(pid, type(error).__name__)
print(dict(os.environ))
"""


async def test_no_environment_of_the_harness_is_readable(secret_in_environment):
    output = await run_python(READ_EVERY_ENVIRON, LIMITS)
    assert secret_in_environment not in output
    assert "SERPER_API_KEY" not in output
    # only the sandbox's own processes are visible: its init (bwrap, pid 1) and the code (pid 2)
    assert output.startswith("pids [1, 2]\n")


async def test_a_libc_socket_cannot_reach_a_listener_on_the_host():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        code = f"""
import ctypes, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
address = struct.pack('=H', socket.AF_INET) + struct.pack('!H', {port}) + socket.inet_aton('127.0.0.1') + bytes(8)
print('connect', libc.connect(fd, address, len(address)), ctypes.get_errno())
"""
        output = await run_python(code, LIMITS)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nobody connected
            listener.accept()
    assert output.startswith("connect -1 ")


async def test_files_outside_cannot_be_written_by_dir_fd_sqlite_uri_or_into_the_system(tmp_path):
    code = f"""
import os, sqlite3, sys
attempts = {{
    'dir_fd': lambda: os.close(os.open('escape.txt', os.O_WRONLY | os.O_CREAT, dir_fd=os.open({str(tmp_path)!r}, os.O_RDONLY))),
    'root_dir_fd': lambda: os.close(os.open({str(tmp_path / "escape2.txt")!r}.lstrip('/'), os.O_WRONLY | os.O_CREAT, dir_fd=os.open('/', os.O_RDONLY))),
    'sqlite': lambda: sqlite3.connect('file:' + {str(tmp_path / "escape.db")!r} + '?mode=rwc', uri=True).execute('create table t(x)'),
    'system': lambda: open('/usr/mara-escape.txt', 'w'),
    'interpreter': lambda: open(sys.base_prefix + '/mara-escape.txt', 'w'),
}}
for name, attempt in attempts.items():
    try:
        attempt()
        print(name, 'wrote')
    except Exception as error:
        print(name, type(error).__name__)
"""  # noqa: E501
    output = await run_python(code, LIMITS)
    assert "wrote" not in output
    assert list(tmp_path.iterdir()) == []
    assert not Path("/usr/mara-escape.txt").exists()
    assert not Path(sys.base_prefix, "mara-escape.txt").exists()


async def test_a_process_started_by_fork_exec_reads_no_secret_and_writes_nothing_outside(
    tmp_path, secret_in_environment
):
    escape = tmp_path / "escape.txt"
    script = (
        f"cat /proc/[0-9]*/environ; echo; env; echo leak > {escape} || echo write refused; echo shell done"
    )
    code = f"""
import _posixsubprocess, os
out_read, out_write = os.pipe()
error_read, error_write = os.pipe()
pid = _posixsubprocess.fork_exec(
    [b'/bin/sh', b'-c', {script.encode()!r}], [b'/bin/sh'], True, (out_write,), None, None,
    -1, -1, -1, out_write, -1, out_write, error_read, error_write,
    False, False, -1, None, None, None, -1, None, False,
)
os.close(out_write)
os.close(error_write)
chunks = []
while chunk := os.read(out_read, 65536):
    chunks.append(chunk)
os.waitpid(pid, 0)
print(b''.join(chunks).decode(errors='replace'))
"""
    output = await run_python(code, LIMITS)
    assert output.endswith("write refused\nshell done")
    assert secret_in_environment not in output
    assert not escape.exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_signals_cannot_reach_the_harness_or_its_other_processes():
    # Only a bystander process is sent SIGKILL (the harness gets signal 0, a pure "can I reach it?" probe), so
    # that a broken sandbox fails this test instead of killing the machine's processes.
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        code = f"""
import ctypes, signal
libc = ctypes.CDLL(None, use_errno=True)
print(libc.kill({os.getpid()}, 0), ctypes.get_errno())
print(libc.kill({bystander.pid}, signal.SIGKILL), ctypes.get_errno())
print(libc.syscall(434, {bystander.pid}, 0), ctypes.get_errno())  # pidfd_open, for pidfd_send_signal
"""
        output = await run_python(code, LIMITS)
        assert _alive(bystander.pid)
        assert output.splitlines() == [f"-1 {errno.ESRCH}"] * 3  # no such process, seen from the sandbox
    finally:
        bystander.kill()
        bystander.wait()


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


DETACH = """
import os, sys, time
started, ready = os.pipe()
os.set_inheritable(ready, True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        waiting = f'import os, time; os.write({{ready}}, b"x"); time.sleep(120)'
        os.execv(sys.executable, [sys.executable, '-c', waiting, '{marker}'])
    os._exit(0)
os.read(started, 1)  # the detached process is running
time.sleep(1)  # long enough for the test to see it
print('detached', flush=True)
"""


@pytest.mark.parametrize("ending", ["returns", "times out", "is cancelled"])
async def test_a_detached_double_forked_process_does_not_outlive_the_call(ending):
    marker = f"mara-escape-{uuid.uuid4().hex}"
    code = DETACH.format(marker=marker) + ("while True:\n    pass\n" if ending != "returns" else "")
    limits = SandboxLimits(timeout=3 if ending == "times out" else 30, memory_mb=400)
    call = asyncio.ensure_future(run_python(code, limits))
    seen_running = False
    while not call.done():
        seen_running = seen_running or bool(_processes_with(marker))
        if seen_running and ending == "is cancelled":
            call.cancel()
        await asyncio.sleep(0.05)
    assert seen_running, "the detached process never started"
    if ending == "returns":
        assert call.result() == "detached"
    elif ending == "times out":
        with pytest.raises(ToolError, match="time limit"):
            call.result()
    else:
        assert call.cancelled()
    for _ in range(100):  # killed with the namespace when the call ended; gone once reaped
        if not _processes_with(marker):
            break
        await asyncio.sleep(0.05)
    assert _processes_with(marker) == []


async def test_the_code_runs_as_nobody_with_no_capabilities_no_new_privileges_and_only_loopback():
    code = (
        "import os, socket\nprint(os.getuid(), os.getgid())\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
        "print(open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])\n"
        "print(sorted(name for _, name in socket.if_nameindex()))"
    )
    assert await run_python(code, LIMITS) == "65534 65534\n0000000000000000\n1\n['lo']"


async def test_only_the_working_directory_and_the_capped_scratch_space_are_writable():
    code = """
import os
for place in ['/sandbox', '/tmp', '/dev/shm', '/', '/dev', '/opt', '/usr', '/etc', '/proc', '/root']:
    try:
        open(place + '/probe', 'w').close()
        print(place, 'writable')
    except OSError as error:
        print(place, type(error).__name__)
for place in ['/sandbox', '/tmp', '/dev/shm']:
    print(os.statvfs(place).f_blocks * os.statvfs(place).f_frsize // 2**20)
"""
    lines = (await run_python(code, SandboxLimits(timeout=10, memory_mb=300))).splitlines()
    assert [line.split()[0] for line in lines[:-3] if line.endswith(" writable")] == [
        "/sandbox",
        "/tmp",
        "/dev/shm",
    ]
    assert lines[-3:] == ["100"] * 3  # MiB: the three share the memory limit


SYSCTLS = ["kernel/printk_ratelimit", "kernel/core_pattern", "fs/suid_dumpable", "kernel/randomize_va_space"]
OPEN_HOST_SETTINGS = """
import os
for name in {names!r} + ['vm/drop_caches', '../sysrq-trigger']:
    try:
        os.close(os.open('/proc/sys/' + name, os.O_WRONLY))
        print(name, 'opened for writing')
    except OSError as error:
        print(name, type(error).__name__)
"""


async def test_host_kernel_settings_cannot_be_opened_for_writing():
    # Opened, never written: a broken sandbox fails this test without changing the machine.
    before = {name: Path("/proc/sys", name).read_text() for name in SYSCTLS}
    output = await run_python(OPEN_HOST_SETTINGS.format(names=SYSCTLS), LIMITS)
    assert "opened for writing" not in output
    assert len(output.splitlines()) == len(SYSCTLS) + 2
    assert {name: Path("/proc/sys", name).read_text() for name in SYSCTLS} == before


def _keyctl(*arguments) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    answer = libc.syscall(*arguments)
    if answer < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return answer


ADD_KEY, KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_SESSION_KEYRING = 248, 250, 1, -3


@pytest.fixture
def key_in_the_harness_session_keyring() -> tuple[int, str]:
    """A secret stored in a session keyring this (test) process joins, as a systemd service's would be."""
    if os.uname().machine != "x86_64":
        pytest.skip("the key store's system call numbers are written for x86-64")
    try:
        _keyctl(KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, f"mara-test-{uuid.uuid4().hex}".encode(), 0, 0, 0)
        key = _keyctl(
            ADD_KEY, b"user", b"mara-canary", SECRET.encode(), len(SECRET), KEY_SPEC_SESSION_KEYRING
        )
    except OSError as error:
        pytest.skip(f"this machine refuses the harness a session keyring ({error})")
    return key, SECRET


READ_KEYS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(4096)
found = libc.syscall(250, 10, -3, b'user', b'mara-canary', 0)  # KEYCTL_SEARCH the session keyring
print('search', found, ctypes.get_errno())
for key in (found, {key}):
    print('read', libc.syscall(250, 11, key, buffer, 4096), ctypes.get_errno(), buffer.value)  # KEYCTL_READ
"""


async def test_a_key_in_the_harness_session_keyring_cannot_be_read(key_in_the_harness_session_keyring):
    key, secret = key_in_the_harness_session_keyring
    output = await run_python(READ_KEYS.format(key=key), LIMITS)
    assert secret not in output
    assert output.splitlines()[0] == f"search -1 {errno.EPERM}"


KERNEL_SURFACE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
calls = {{
    'unshare user namespace': lambda: libc.unshare(0x10000000),
    'unshare mount namespace': lambda: libc.unshare(0x00020000),
    'io_uring_setup': lambda: libc.syscall({io_uring_setup}, 8, ctypes.create_string_buffer(120)),
    'userfaultfd': lambda: libc.syscall({userfaultfd}, 0),
    'perf_event_open': lambda: libc.syscall({perf_event_open}, ctypes.create_string_buffer(128), 0, -1, -1, 0),
    'bpf': lambda: libc.syscall({bpf}, 0, ctypes.create_string_buffer(128), 128),
    'ptrace': lambda: libc.syscall({ptrace}, 16, 1, 0, 0),  # PTRACE_ATTACH to the namespace's init
    'mount': lambda: libc.mount(b'none', b'/tmp', b'tmpfs', 0, None),
}}
for name, call in calls.items():
    print(name, call(), ctypes.get_errno())
pid = os.fork()  # a plain fork still works
if pid == 0:
    os._exit(7)
print('fork', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.skipif(
    seccomp_filter.program() is None, reason="no seccomp filter for this machine's system calls"
)
async def test_new_namespaces_and_the_kernel_surface_an_interpreter_does_not_need_are_refused():
    output = await run_python(KERNEL_SURFACE.format(**seccomp_filter.call_numbers()), LIMITS)
    *refused, fork = output.splitlines()
    assert len(refused) == 8
    assert all(line.endswith(f" -1 {errno.EPERM}") for line in refused), output
    assert fork == "fork 7"
