"""The ``python`` tool: run agent-written Python in a limited, isolated child process and return its output.

Isolation (``python_sandbox``): ``bwrap`` (the default) runs each call in its own namespaces under bubblewrap --
no network, no other process visible, an empty environment, the system read-only, only fresh size-capped tmpfs
writable, as an unprivileged host uid, behind a seccomp filter, and the whole namespace killed when the call ends
(see ``mara_bench.harness.tools.bwrap``); ``unisolated`` runs the child directly with an in-process audit hook that refuses
network access, starting processes and writes outside its directory -- a guard against an agent's mistakes, not
a boundary against hostile code (see ``sandbox_child``); ``inspect`` runs it in the sample's Inspect sandbox
(``mara_bench.harness.tools.inspect_sandbox``).

Limits (all settings of ``build_toolbox``): wall time ``python_timeout`` seconds (the process group is killed),
address space ``python_memory_mb`` per process (RLIMIT_AS), CPU time (RLIMIT_CPU, a back-stop just above the wall
limit), file size, and ``python_max_output`` characters of output kept per stream. Under bwrap, one call as a
whole: where a cgroup can be made (``call_cgroup``), its processes and scratch files together hold at most
``python_memory_mb`` and it runs at most ``SandboxLimits.max_processes`` processes; else the scratch space
(``/sandbox``, ``/tmp``, ``/dev/shm``) is capped at ``python_memory_mb`` in all and the process count by
RLIMIT_NPROC. Which protections are in force is logged (``protection_line``) when the tool is built and from
its first call. Every failure -- a timeout, the memory limit, a refused operation, an exception, a failure of
the harness itself -- raises ``ToolError``; the call's folder (``unisolated``) and cgroup are removed whatever
the code left in them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import mara_bench.harness.tools.bwrap as bwrap
import mara_bench.harness.tools.call_cgroup as call_cgroup
import mara_bench.harness.tools.cleanup_tree as cleanup_tree
from mara_bench.core.episodes import ToolError

logger = logging.getLogger(__name__)
CHILD = Path(__file__).with_name("sandbox_child.py")
READ_CHUNK = 65536
KILLED_UNDER_BWRAP = 128 + signal.SIGKILL
"""bwrap's exit status when the code was killed by SIGKILL (the OOM killer in the call's cgroup)."""
REAP_SECONDS = 10.0
"""How long a killed child's pipes may take to close before the tool answers anyway."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout: float = 30.0
    """Wall-clock seconds before the process is killed."""
    memory_mb: int = 1024
    """Address-space limit of the child in MiB."""
    max_output: int = 10000
    """Characters of stdout (and, separately, stderr) returned to the agent."""
    max_file_mb: int = 64
    """Largest file the code may write inside its directory."""
    max_processes: int = 128
    """Processes and threads of one call together (bwrap: its cgroup, else RLIMIT_NPROC in its user namespace)."""


@dataclass
class _Stream:
    """What is kept of one output pipe: its head (stdout) or its tail (stderr, where the error is)."""

    keep_tail: bool
    kept: bytes = b""
    total: int = 0

    def add(self, chunk: bytes, keep: int) -> None:
        self.total += len(chunk)
        self.kept = (self.kept + chunk)[-keep:] if self.keep_tail else (self.kept + chunk)[:keep]

    def text(self, max_chars: int) -> str:
        text = self.kept.decode("utf-8", errors="replace").rstrip("\n")
        if self.total == len(self.kept) and len(text) <= max_chars:
            return text
        notice = f"[output cut at {max_chars} characters (python_max_output)]"
        return f"{notice}\n{text[-max_chars:]}" if self.keep_tail else f"{text[:max_chars]}\n{notice}"


def _kept_bytes(limits: SandboxLimits) -> int:
    """Bytes enough for ``max_output`` UTF-8 characters."""
    return limits.max_output * 4 + 4


async def _drain(stream: asyncio.StreamReader, keep: int, into: _Stream) -> None:
    """Read a pipe to its end (so the child never blocks on a full pipe), keeping ``keep`` bytes."""
    while chunk := await stream.read(READ_CHUNK):
        into.add(chunk, keep)


def _child_environment(workdir: str) -> dict[str, str]:
    return {
        "PATH": os.defpath,
        "HOME": workdir,
        "TMPDIR": workdir,
        "MPLCONFIGDIR": workdir,
        "MPLBACKEND": "Agg",
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


@functools.cache
def warn_unisolated() -> None:
    """Say once per process that python code runs with only the in-process guard."""
    logger.warning(
        "python tool: python_sandbox=unisolated runs agent code on this machine with only an in-process audit "
        "hook -- it can read this user's files and environment; use bwrap (Debian package bubblewrap) for "
        "untrusted models"
    )


@functools.cache
def protection_line(executable: str) -> str:
    """One line saying which protections a bwrap call of ``executable`` gets on this machine."""
    where = call_cgroup.parents()
    return bwrap.protection(executable, where.describe() if where else None)


def state_protection(executable: str) -> None:
    """Log ``protection_line``: when the tool is built, and once more from the first call, inside an eval's
    sample, so the eval's log holds it too. A warning (Inspect keeps only warnings from other packages) where a
    protection is missing; with every protection in force, at info level: a working sandbox prints nothing."""
    where = call_cgroup.parents()
    missing = bwrap.degraded(where.describe() if where else None)
    logger.log(logging.WARNING if missing else logging.INFO, protection_line(executable))


@functools.cache
def _state_protection_once(executable: str) -> None:
    state_protection(executable)


def child_arguments(
    workdir: str, code_file: str, limits: SandboxLimits, *, guard: bool, max_processes: int = 0
) -> list[str]:
    """``sandbox_child``'s command-line arguments (after the script's path); ``max_processes`` 0 sets no
    process limit (one counted per host user, as outside bubblewrap, would count the harness's own)."""
    return [
        workdir,
        code_file,
        str(limits.memory_mb * 2**20),
        str(int(limits.timeout) + 2),
        str(limits.max_file_mb * 2**20),
        "1" if guard else "0",
        str(max_processes),
    ]


@dataclass
class _Launch:
    """What one call starts: its command line, environment, working directory and passed descriptors."""

    argv: list[str]
    environment: dict[str, str]
    cwd: str
    fds: list[int] = field(default_factory=list)


async def _launch(
    isolation: str, code: str, executable: str, limits: SandboxLimits, cleanup: contextlib.AsyncExitStack
) -> tuple[_Launch, call_cgroup.CallCgroup | None]:
    """The launch of one call and its cgroup (``bwrap`` where the machine offers one); ``cleanup`` is given
    everything to undo once the call is over."""
    if isolation == "bwrap":
        group = None
        if where := call_cgroup.parents():
            group = call_cgroup.make(where, limits.memory_mb * 2**20, limits.max_processes)
            cleanup.push_async_callback(group.remove)
        inside = bwrap.WORKDIR
        arguments = child_arguments(
            inside, f"{inside}/main.py", limits, guard=False, max_processes=limits.max_processes
        )
        prepared = bwrap.prepare(
            executable,
            code.encode("utf-8"),
            CHILD.read_bytes(),
            arguments,
            _child_environment(inside),
            limits.memory_mb * 2**20,
            group.procs_files if group else [],
        )
        cleanup.callback(prepared.close)
        return _Launch(prepared.argv, dict(bwrap.LAUNCH_ENVIRONMENT), "/", prepared.fds), group
    if isolation == "unisolated":
        workdir = tempfile.mkdtemp(prefix="mara-python-")
        cleanup.callback(cleanup_tree.remove_tree, workdir)
        (Path(workdir) / "main.py").write_text(code, encoding="utf-8")
        arguments = child_arguments(workdir, f"{workdir}/main.py", limits, guard=True)
        argv = [executable, "-I", "-B", str(CHILD), *arguments]
        return _Launch(argv, _child_environment(workdir), workdir), None
    raise ValueError(f"unknown python isolation {isolation!r}")


async def run_python(
    code: str, limits: SandboxLimits, executable: str = sys.executable, isolation: str = "bwrap"
) -> str:
    """Run ``code`` under ``limits`` (isolated by ``bwrap``, or ``unisolated``) and return its stdout (and
    stderr, if any) as text for the agent. Every failure, the harness's own included, is a ``ToolError``."""
    if not isinstance(code, str) or not code.strip():
        raise ToolError("python: the 'code' argument must be non-empty Python source")
    if isolation == "bwrap":
        _state_protection_once(executable)
    try:
        return await _run_python(code, limits, executable, isolation)
    except ToolError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever the code did, the agent gets a tool error
        logger.exception("python tool: the call failed in the harness")
        raise ToolError(f"python: the tool failed ({type(error).__name__}: {error})") from error


async def _run_python(code: str, limits: SandboxLimits, executable: str, isolation: str) -> str:
    async with contextlib.AsyncExitStack() as cleanup:
        launch, group = await _launch(isolation, code, executable, limits, cleanup)
        process = await asyncio.create_subprocess_exec(
            *launch.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=launch.cwd,
            env=launch.environment,
            start_new_session=True,
            pass_fds=launch.fds,
        )
        stdout, stderr = _Stream(keep_tail=False), _Stream(keep_tail=True)
        keep = _kept_bytes(limits)
        # The pipes are read to their end whatever happens: asyncio's ``wait()`` only returns once both pipes
        # have closed, and a pipe nobody reads stops being read (and never reports its end) when its buffer fills.
        finished = asyncio.ensure_future(_communicate(process, keep, stdout, stderr))
        try:
            await asyncio.wait_for(asyncio.shield(finished), timeout=limits.timeout)
        except TimeoutError:
            kill_group(process.pid)
            with contextlib.suppress(TimeoutError):  # the pipes close as the killed group exits
                await asyncio.wait_for(finished, timeout=REAP_SECONDS)
            raise time_limit_error(limits, stdout.text(limits.max_output)) from None
        except asyncio.CancelledError:  # the caller has gone: so does the code (``finished`` then reaps it)
            kill_group(process.pid)
            raise
        memory_hit = group is not None and group.hit_memory_limit()
    return _result(
        process.returncode, stdout.text(limits.max_output), stderr.text(limits.max_output), limits, memory_hit
    )


def time_limit_error(limits: SandboxLimits, output_so_far: str) -> ToolError:
    return ToolError(
        f"python: stopped after the {limits.timeout:g} s time limit (python_timeout); "
        f"output so far:\n{output_so_far or '(none)'}"
    )


def tool_answer(returncode: int, stdout: bytes, stderr: bytes, limits: SandboxLimits) -> str:
    """The agent's text for a finished child given its whole output (capped like a streamed one), else
    ``ToolError``."""
    out, err = _Stream(keep_tail=False), _Stream(keep_tail=True)
    out.add(stdout, _kept_bytes(limits))
    err.add(stderr, _kept_bytes(limits))
    return _result(returncode, out.text(limits.max_output), err.text(limits.max_output), limits)


async def _communicate(
    process: asyncio.subprocess.Process, keep: int, stdout: _Stream, stderr: _Stream
) -> None:
    await asyncio.gather(_drain(process.stdout, keep, stdout), _drain(process.stderr, keep, stderr))
    await process.wait()


def kill_group(pid: int) -> None:
    """SIGKILL the child's whole process group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _result(returncode: int, out: str, err: str, limits: SandboxLimits, memory_hit: bool = False) -> str:
    if returncode == 0:
        text = out + (f"\n[stderr]\n{err}" if err else "")
        return text or "(no output; print() the values you need)"
    if (
        "MemoryError" in err
        or returncode == -signal.SIGSEGV
        or (memory_hit and returncode in (-signal.SIGKILL, KILLED_UNDER_BWRAP))
    ):
        raise ToolError(
            f"python: exceeded the memory limit of {limits.memory_mb} MiB (python_memory_mb)\n{err}"
        )
    if returncode == -signal.SIGXCPU:
        raise ToolError(f"python: stopped at the CPU time limit (python_timeout={limits.timeout:g} s)")
    if returncode == -signal.SIGXFSZ:
        raise ToolError(f"python: a file grew past {limits.max_file_mb} MiB and the process was stopped")
    output = "\n".join(part for part in (out, err) if part)
    if returncode < 0:
        raise ToolError(f"python: killed by signal {signal.Signals(-returncode).name}\n{output}".rstrip())
    raise ToolError(f"python: the code raised an error (exit status {returncode})\n{output}".rstrip())
