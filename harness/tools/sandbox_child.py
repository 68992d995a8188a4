"""The child side of the python tool: set resource limits, install the audit hook if asked, run the code.

Executed as a script (``python -I -B sandbox_child.py WORKDIR CODE_FILE MEMORY_BYTES CPU_SECONDS FILE_BYTES
GUARD MAX_PROCESSES``) by ``mara_bench.harness.tools.python_sandbox``, inside bubblewrap, an Inspect sandbox or (``unisolated``)
directly; it uses only the standard library and is never imported by the harness. ``GUARD`` is ``1`` to
install the audit hook (``unisolated`` only: the other modes are isolated from outside the process);
``MAX_PROCESSES`` above 0 caps the processes and threads of the code's user (RLIMIT_NPROC: under bubblewrap, its
user namespace's).

The audit hook refuses, with ``PermissionError``: creating non-Unix sockets, connecting/binding any socket and
DNS look-ups (no network); starting processes (which could reach the network or escape the limits); opening
files for writing, and creating/removing/renaming/linking paths, outside the working directory; loading C
libraries through ctypes other than the running process. This stops an agent's ordinary code from leaking or
damaging anything; it is not a boundary against deliberately hostile code (bubblewrap or a container is).
"""

import os
import resource
import socket
import sys
import traceback

DENIED_EVENTS = {
    "socket.connect": "network access is disabled",
    "socket.bind": "network access is disabled",
    "socket.getaddrinfo": "network access is disabled",
    "socket.gethostbyname": "network access is disabled",
    "socket.gethostbyaddr": "network access is disabled",
    "socket.sendto": "network access is disabled",
    "subprocess.Popen": "starting processes is disabled",
    "os.system": "starting processes is disabled",
    "os.exec": "starting processes is disabled",
    "os.posix_spawn": "starting processes is disabled",
    "os.spawn": "starting processes is disabled",
    "os.fork": "starting processes is disabled",
    "os.forkpty": "starting processes is disabled",
    "os.kill": "sending signals is disabled",
    "os.killpg": "sending signals is disabled",
}
PATH_EVENTS = {  # event -> how many leading arguments are paths that get modified
    "os.remove": 1,
    "os.rmdir": 1,
    "os.mkdir": 1,
    "os.chmod": 1,
    "os.chown": 1,
    "os.truncate": 1,
    "os.utime": 1,
    "os.setxattr": 1,
    "os.removexattr": 1,
    "shutil.rmtree": 1,
    "sqlite3.connect": 1,
    "os.rename": 2,
    "os.link": 2,
    "os.symlink": 2,
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
ALLOWED_WRITE_PATHS = {os.devnull}


def _inside(path, root: str) -> bool:
    if isinstance(path, int):  # an already-open file descriptor
        return True
    resolved = os.path.realpath(os.fsdecode(path))
    return resolved == root or resolved.startswith(root + os.sep) or resolved in ALLOWED_WRITE_PATHS


def _is_write(mode, flags) -> bool:
    if isinstance(mode, str) and any(letter in mode for letter in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


def make_audit_hook(root: str):
    def refuse(reason: str):
        raise PermissionError(f"python sandbox: {reason}")

    def hook(event: str, args: tuple) -> None:
        if event in DENIED_EVENTS:
            refuse(DENIED_EVENTS[event])
        elif event == "socket.__new__" and args[1] != socket.AF_UNIX:
            refuse("network access is disabled")
        elif event == "ctypes.dlopen" and args[0] is not None:
            refuse(f"loading C libraries ({args[0]}) is disabled")
        elif event == "open" and _is_write(args[1], args[2]) and not _inside(args[0], root):
            refuse(f"writing outside the working directory is not allowed: {args[0]}")
        elif event in PATH_EVENTS:
            for path in args[: PATH_EVENTS[event]]:
                if path is not None and not _inside(path, root):
                    refuse(f"changing files outside the working directory is not allowed: {path}")

    return hook


def main() -> None:
    workdir, code_file, memory_bytes, cpu_seconds, file_bytes, guard, max_processes = sys.argv[1:8]
    if int(max_processes) > 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (int(max_processes), int(max_processes)))
    for limit, value in (
        (resource.RLIMIT_AS, int(memory_bytes)),
        (resource.RLIMIT_CPU, int(cpu_seconds)),
        (resource.RLIMIT_FSIZE, int(file_bytes)),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))
    os.chdir(workdir)
    with open(code_file, encoding="utf-8") as handle:
        code = handle.read()
    sys.argv = [code_file]
    if guard == "1":
        sys.addaudithook(make_audit_hook(os.path.realpath(workdir)))
    try:
        exec(compile(code, code_file, "exec"), {"__name__": "__main__", "__file__": code_file})
    except Exception as error:
        report(error)
        sys.exit(1)


def report(error: Exception) -> None:
    """Print the traceback of the agent's code without this file's frames (the hook, ``main``)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename != __file__]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    sys.stderr.write("".join(lines + traceback.format_exception_only(type(error), error)))


if __name__ == "__main__":
    main()
