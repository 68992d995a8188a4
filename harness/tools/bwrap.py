"""Bubblewrap isolation for the python tool: the ``bwrap`` launch for one call, and whether bwrap works here.

Each call runs in its own PID, network, IPC, UTS and cgroup namespaces as ``nobody`` with no capabilities, in a
new session, with an empty environment: ``--clearenv`` for the code, and bwrap itself is started with only
``PATH``. When the harness is not root, the call also gets its own user namespace and cannot make more
(``--disable-userns``). When it is root, bwrap makes no user namespace -- one would map the code's uid to host
root, and with it the host's ``/proc/sys`` would be writable -- but sets the sandbox up as root and starts the
code through ``setpriv`` as host uid ``nobody`` with no capabilities, bounding set included, and no way to
gain privileges (``no_new_privs``; every mount is ``nosuid`` too). Either way a
seccomp filter (``seccomp_filter``) refuses the key store, io_uring, userfaultfd, perf, bpf, ptrace, mounts and
new namespaces.

The root is a read-only tmpfs holding, read-only, the system directories (``/usr`` and its merged-usr links), a
few ``/etc`` files programs need, the interpreter's installation (``sys.prefix`` and ``sys.base_prefix``, the
directories leading to it searchable by anyone), and the child script and the code, passed in memory files.
The writable places are the working directory ``/sandbox``, ``/tmp`` and ``/dev/shm``: fresh tmpfs, each a
third of the call's scratch space where bwrap can size them (0.8 and later); nothing is written on the host.
``/tmp`` is mounted before the interpreter's binds, so an interpreter or checkout under ``/tmp`` stays visible.
``/proc`` is the namespace's own (bwrap keeps its ``sys``, ``sysrq-trigger``, ``irq`` and ``bus`` read-only,
and the code's host uid cannot write the rest) and ``/dev`` a minimal read-only one. The network namespace holds
only its own loopback. A launcher shell can first enter the call's cgroup (``call_cgroup``).

``--die-with-parent`` ties the namespace's init to bwrap: when the tool kills bwrap (time limit, cancelled
call) the init dies and the kernel kills every process left in the namespace, detached or double-forked ones
included. The same happens when the code's main process exits.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mara_bench.harness.tools.seccomp_filter as seccomp_filter

BWRAP = "bwrap"
PACKAGE = "bubblewrap"
"""The Debian/Ubuntu package that provides ``bwrap``."""
WORKDIR = "/sandbox"
"""Where the call's working directory appears inside the sandbox."""
CHILD_PATH = "/opt/mara/sandbox_child.py"
"""Where the child script appears inside the sandbox."""
NOBODY = "65534"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "/etc/alternatives",
    "/etc/fonts",
    "/etc/group",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/mime.types",
    "/etc/nsswitch.conf",
    "/etc/passwd",
)
"""The only ``/etc`` entries visible inside: what the dynamic loader, fonts, time zones and ``pwd`` need."""
LAUNCH_ENVIRONMENT = {"PATH": os.defpath}
SETPRIV = "setpriv"
"""util-linux's ``setpriv``: starts the code as ``NOBODY`` when the harness is root."""
SHELL = "/bin/sh"
ENTER_CGROUPS = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""The launcher's script: enter each ``cgroup.procs`` given before ``--``, then run the rest."""
PROBE_SECONDS = 30


@functools.cache
def interpreter_dirs(executable: str) -> tuple[str, ...]:
    """The installation directories ``executable`` needs (its ``sys.prefix`` and ``sys.base_prefix``), leaving
    out those already under the system directories."""
    answer = subprocess.run(
        [executable, "-I", "-c", "import sys; print(sys.prefix); print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        env=LAUNCH_ENVIRONMENT,
        timeout=PROBE_SECONDS,
        check=True,
    )
    dirs = dict.fromkeys(line for line in answer.stdout.splitlines() if line)
    return tuple(d for d in dirs if not any(_under(d, system) for system in SYSTEM_DIRS))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


@dataclass
class Prepared:
    """One call's launch: the argument list and the descriptors it passes (memory files holding the child
    script, the code and the seccomp program), closed by ``close`` once the call is over."""

    argv: list[str]
    fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()


def drops_root() -> bool:
    """Whether the harness runs as root. bwrap then makes no user namespace (one would map the code's uid to host
    root, and the host's ``/proc/sys`` would be writable to it): it sets up the sandbox as root and starts the
    code through ``setpriv`` as host uid ``NOBODY`` with no capabilities, bounding set included."""
    return os.geteuid() == 0


def prepare(
    executable: str,
    code: bytes,
    child: bytes,
    child_args: list[str],
    environment: dict[str, str],
    scratch_bytes: int,
    enter_cgroups: Sequence[str] = (),
) -> Prepared:
    """The launch running the script ``child`` (at ``CHILD_PATH``) as ``executable -I -B CHILD_PATH child_args``
    isolated, with ``code`` read-only at ``WORKDIR/main.py``, ``environment`` as the only environment, and
    ``WORKDIR``, ``/tmp`` and ``/dev/shm`` each a fresh tmpfs of a third of ``scratch_bytes`` (where this bwrap
    can size one). ``enter_cgroups`` are ``cgroup.procs`` files the launcher enters before bwrap starts."""
    prepared = Prepared([])
    try:
        prepared.argv = _argv(executable, code, child, child_args, environment, scratch_bytes, prepared.fds)
    except BaseException:
        prepared.close()
        raise
    if enter_cgroups:
        prepared.argv = [SHELL, "-c", ENTER_CGROUPS, "sh", *enter_cgroups, "--", *prepared.argv]
    return prepared


def _argv(
    executable: str,
    code: bytes,
    child: bytes,
    child_args: list[str],
    environment: dict[str, str],
    scratch_bytes: int,
    fds: list[int],
) -> list[str]:
    def data(content: bytes) -> str:
        fd = os.memfd_create("mara-sandbox", os.MFD_CLOEXEC)
        fds.append(fd)
        os.write(fd, content)
        os.lseek(fd, 0, os.SEEK_SET)
        return str(fd)

    mounts: list[str] = []
    for path in SYSTEM_DIRS + ETC_ENTRIES:
        mounts += ["--ro-bind-try", path, path]
    for path in interpreter_dirs(executable):
        mounts += _searchable_parents(path) + ["--ro-bind", path, path]
    size = ["--size", str(max(scratch_bytes // 3, 2**20))] if _sizes_tmpfs() else []
    program = seccomp_filter.program()
    seccomp = ["--seccomp", data(program)] if program is not None else []
    variables = [item for name, value in environment.items() for item in ("--setenv", name, value)]
    if drops_root():
        identity: list[str] = []
        as_nobody = [setpriv_path(), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        as_nobody += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    else:
        identity = [
            "--unshare-user",
            "--disable-userns",
            "--uid",
            NOBODY,
            "--gid",
            NOBODY,
            "--cap-drop",
            "ALL",
        ]
        as_nobody = []
    # /tmp comes first: an interpreter installed under /tmp is then bound inside the fresh /tmp, not hidden by it.
    return [
        BWRAP,
        "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
        *identity,
        "--die-with-parent",
        "--new-session",
        "--hostname", "sandbox",
        *size, "--perms", "1777", "--tmpfs", "/tmp",
        *mounts,
        "--perms", "0444", "--ro-bind-data", data(child), CHILD_PATH,
        *size, "--perms", "1777", "--tmpfs", WORKDIR,
        "--perms", "0444", "--ro-bind-data", data(code), f"{WORKDIR}/main.py",
        "--proc", "/proc",
        "--dev", "/dev",
        *size, "--perms", "1777", "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",
        "--remount-ro", "/",
        *seccomp,
        "--chdir", WORKDIR,
        "--clearenv",
        *variables,
        *as_nobody,
        executable, "-I", "-B", CHILD_PATH, *child_args,
    ]  # fmt: skip


def _searchable_parents(path: str) -> list[str]:
    """Make the directories leading to ``path`` inside the sandbox searchable by anyone (bwrap would make them
    ``0700``, out of ``NOBODY``'s reach when bwrap runs as root)."""
    parents = [str(parent) for parent in reversed(Path(path).parents) if str(parent) != "/"]
    return [item for parent in parents for item in ("--perms", "0755", "--dir", parent)]


def setpriv_path() -> str:
    """Where ``setpriv`` is (under the system directories every sandbox sees)."""
    return shutil.which(SETPRIV, path=os.defpath) or f"/usr/bin/{SETPRIV}"


@functools.cache
def _sizes_tmpfs() -> bool:
    """Whether this bwrap takes ``--size`` (bubblewrap 0.8 and later)."""
    try:
        usage = subprocess.run([BWRAP, "--help"], capture_output=True, text=True, timeout=PROBE_SECONDS)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in usage.stdout + usage.stderr


def installed() -> bool:
    return shutil.which(BWRAP) is not None


@functools.cache
def unavailable_reason(executable: str) -> str | None:
    """What fails when bwrap isolates ``executable`` on this machine (not installed, no ``setpriv``, the sandbox's
    own error), else ``None``. Checked once per interpreter by running ``import sys`` in a sandbox."""
    if not installed():
        return f"{BWRAP} is not installed"
    if drops_root() and shutil.which(SETPRIV, path=os.defpath) is None:
        return f"the harness runs as root and {SETPRIV} (util-linux) is not installed to run code as uid {NOBODY}"
    try:
        prepared = prepare(executable, b"", b"import sys\n", [], {"PATH": os.defpath}, 3 * 2**20)
    except OSError as err:
        return f"the sandbox for {executable} cannot be prepared: {err}"
    try:
        answer = subprocess.run(
            prepared.argv,
            capture_output=True,
            text=True,
            env=LAUNCH_ENVIRONMENT,
            timeout=PROBE_SECONDS,
            pass_fds=prepared.fds,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return f"{BWRAP} could not be run ({type(err).__name__}: {err})"
    finally:
        prepared.close()
    if answer.returncode != 0:
        detail = (answer.stderr.strip().splitlines() or [f"exit status {answer.returncode}"])[-1]
        return f"{BWRAP} could not start {executable} in a sandbox ({detail})"
    return None


def degraded(cgroups: str | None) -> bool:
    """Whether a protection ``protection`` lists is missing here: the seccomp filter, a per-call cgroup
    (``cgroups`` ``None``) or a capped scratch space."""
    return seccomp_filter.program() is None or cgroups is None or not _sizes_tmpfs()


def protection(executable: str, cgroups: str | None) -> str:
    """One line saying which protections a bwrap call gets on this machine (``cgroups``: the per-call group's
    description, ``None`` where there is none)."""
    machine = platform.machine()
    parts = [
        f"bubblewrap, code as host uid {NOBODY} without capabilities (the harness is root)"
        if drops_root()
        else f"bubblewrap, code as uid {NOBODY} in its own user namespace",
        f"seccomp filter on ({machine})"
        if seccomp_filter.program() is not None
        else f"NO seccomp filter (system calls of {machine} not described)",
        "new user namespaces off",
        cgroups
        or "NO per-call cgroup (no writable, delegated cgroup here): memory is capped per process (RLIMIT_AS), "
        "processes per call (RLIMIT_NPROC)",
        "scratch space capped (tmpfs size)"
        if _sizes_tmpfs()
        else "scratch space NOT capped (bwrap older than 0.8)",
    ]
    return "python tool isolation: " + "; ".join(parts)
