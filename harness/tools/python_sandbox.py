"""The ``python`` tool: run agent-written Python in a limited child process and return its output.

Limits (all settings of ``build_toolbox``): wall time ``python_timeout`` seconds (the process group is killed),
address space ``python_memory_mb`` (RLIMIT_AS), CPU time (RLIMIT_CPU, a back-stop just above the wall limit),
file size, and ``python_max_output`` characters of output kept per stream. The child runs in a fresh temporary
directory with a minimal environment (no proxy variables, ``HOME``/``TMPDIR`` inside it) and an audit hook that
refuses network access, starting processes and writes outside that directory (see ``sandbox_child``).
Every failure -- a timeout, the memory limit, a refused operation, an exception -- raises ``ToolError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.systems.types import ToolError

CHILD = Path(__file__).with_name("sandbox_child.py")
READ_CHUNK = 65536
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


async def run_python(code: str, limits: SandboxLimits, executable: str = sys.executable) -> str:
    """Run ``code`` under ``limits`` and return its stdout (and stderr, if any) as text for the agent."""
    if not isinstance(code, str) or not code.strip():
        raise ToolError("python: the 'code' argument must be non-empty Python source")
    with tempfile.TemporaryDirectory(prefix="mara-python-") as workdir:
        code_file = Path(workdir) / "main.py"
        code_file.write_text(code, encoding="utf-8")
        process = await asyncio.create_subprocess_exec(
            executable, "-I", "-B", str(CHILD), workdir, str(code_file),
            str(limits.memory_mb * 2**20), str(int(limits.timeout) + 2), str(limits.max_file_mb * 2**20),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            env=_child_environment(workdir),
            start_new_session=True,
        )  # fmt: skip
        stdout, stderr = _Stream(keep_tail=False), _Stream(keep_tail=True)
        keep = limits.max_output * 4 + 4  # bytes enough for max_output UTF-8 characters
        # The pipes are read to their end whatever happens: asyncio's ``wait()`` only returns once both pipes
        # have closed, and a pipe nobody reads stops being read (and never reports its end) when its buffer fills.
        finished = asyncio.ensure_future(_communicate(process, keep, stdout, stderr))
        try:
            await asyncio.wait_for(asyncio.shield(finished), timeout=limits.timeout)
        except TimeoutError:
            kill_group(process.pid)
            with contextlib.suppress(TimeoutError):  # the pipes close as the killed group exits
                await asyncio.wait_for(finished, timeout=REAP_SECONDS)
            raise ToolError(
                f"python: stopped after the {limits.timeout:g} s time limit (python_timeout); "
                f"output so far:\n{stdout.text(limits.max_output) or '(none)'}"
            ) from None
        except asyncio.CancelledError:  # the caller has gone: so does the code (``finished`` then reaps it)
            kill_group(process.pid)
            raise
    return _result(process.returncode, stdout.text(limits.max_output), stderr.text(limits.max_output), limits)


async def _communicate(
    process: asyncio.subprocess.Process, keep: int, stdout: _Stream, stderr: _Stream
) -> None:
    await asyncio.gather(_drain(process.stdout, keep, stdout), _drain(process.stderr, keep, stderr))
    await process.wait()


def kill_group(pid: int) -> None:
    """SIGKILL the child's whole process group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _result(returncode: int, out: str, err: str, limits: SandboxLimits) -> str:
    if returncode == 0:
        text = out + (f"\n[stderr]\n{err}" if err else "")
        return text or "(no output; print() the values you need)"
    if "MemoryError" in err or returncode == -signal.SIGSEGV:
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
