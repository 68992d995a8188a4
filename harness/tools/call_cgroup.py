"""A control group per python tool call, where this machine lets the harness make one: the call's memory (its
processes and its tmpfs scratch space together) and process count bounded as a whole.

Looked for once per process, under the harness's own cgroup: cgroup v2 (the unified hierarchy, with the
``memory`` and ``pids`` controllers enabled for children) or else cgroup v1 (the ``memory`` and ``pids``
hierarchies); usable when a child group can be made there (root, or a delegated subtree). The launcher enters
the group before starting bubblewrap, so every process of the call is in it. ``remove`` kills what is left and
deletes the group; it never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)
CONTROLLERS = ("memory", "pids")
PREFIX = "mara-python-"
REMOVE_TRIES = 50
REMOVE_PAUSE_SECONDS = 0.02


@dataclass(frozen=True)
class CgroupParents:
    """Where this process may make per-call groups: one parent directory per hierarchy."""

    version: int
    parents: tuple[Path, ...]

    def describe(self) -> str:
        return f"cgroup v{self.version} per call ({' + '.join(CONTROLLERS)})"


@dataclass(frozen=True)
class CallCgroup:
    """One call's group: a directory in each hierarchy."""

    version: int
    dirs: tuple[Path, ...]

    @property
    def procs_files(self) -> list[str]:
        """The files the launcher writes its pid into to enter the group."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def hit_memory_limit(self) -> bool:
        """Whether the kernel refused the call memory (an allocation failed or a process was OOM-killed)."""
        memory = self.dirs[0]
        if self.version == 2:
            counts = _counts(memory / "memory.events")
            return counts.get("oom", 0) + counts.get("oom_kill", 0) > 0
        failures = int((_read(memory / "memory.failcnt") or ["0"])[0])
        return failures + _counts(memory / "memory.oom_control").get("oom_kill", 0) > 0

    async def remove(self) -> None:
        """SIGKILL whatever is left in the group and delete it; failures are logged, never raised."""
        try:
            for _ in range(REMOVE_TRIES):
                for directory in self.dirs:
                    for pid in _read(directory / "cgroup.procs"):
                        with contextlib.suppress(OSError, ValueError):
                            os.kill(int(pid), signal.SIGKILL)
                    with contextlib.suppress(OSError):  # busy until its last process is reaped
                        directory.rmdir()
                if not any(d.exists() for d in self.dirs):
                    return
                await asyncio.sleep(REMOVE_PAUSE_SECONDS)
            logger.warning(
                "python tool: could not remove the call's cgroup %s", ", ".join(map(str, self.dirs))
            )
        except Exception:  # noqa: BLE001 - cleanup must never fail the call
            logger.exception("python tool: removing the call's cgroup failed")


def _read(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="ascii").splitlines()
    except OSError:
        return []


def _counts(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file (``name value`` per line) as numbers."""
    pairs = (line.split() for line in _read(path))
    return {pair[0]: int(pair[1]) for pair in pairs if len(pair) == 2 and pair[1].isdigit()}


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root inside the hierarchy, filesystem type, super options) of every cgroup mount."""
    mounts = []
    for line in _read(Path("/proc/self/mountinfo")):
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            mounts.append((fields[4], fields[3], tail[0], set(tail[2].split(","))))
    return mounts


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under ``""`` its v2 path."""
    paths = {}
    for line in _read(Path("/proc/self/cgroup")):
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _inside(mount_point: str, mount_root: str, path: str) -> Path:
    relative = path[len(mount_root) :] if path.startswith(mount_root) else path
    return Path(mount_point) / relative.lstrip("/")


def _can_make_children(parent: Path) -> bool:
    probe = parent / f"{PREFIX}probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


@functools.cache
def parents() -> CgroupParents | None:
    """Where per-call groups can be made here, or ``None`` (no writable, delegated cgroup)."""
    own = _own_paths()
    mounts = _mounts()
    for point, root, kind, _ in mounts:
        if kind == "cgroup2" and "" in own:
            parent = _inside(point, root, own[""])
            enabled = set(" ".join(_read(parent / "cgroup.subtree_control")).split())
            if set(CONTROLLERS) <= enabled and _can_make_children(parent):
                return CgroupParents(2, (parent,))
    found = []
    for controller in CONTROLLERS:
        matches = [
            (point, root) for point, root, kind, opts in mounts if kind == "cgroup" and controller in opts
        ]
        if not matches or controller not in own:
            return None
        parent = _inside(*matches[0], own[controller])
        if not _can_make_children(parent):
            return None
        found.append(parent)
    return CgroupParents(1, tuple(found))


def make(where: CgroupParents, memory_bytes: int, max_processes: int) -> CallCgroup:
    """A new group for one call holding at most ``memory_bytes`` (no swap) in at most ``max_processes``
    processes; ``OSError`` if it cannot be made."""
    name = f"{PREFIX}{uuid.uuid4().hex}"
    group = CallCgroup(where.version, tuple(parent / name for parent in where.parents))
    try:
        for directory in group.dirs:
            directory.mkdir()
        if where.version == 2:
            _write(group.dirs[0] / "memory.max", memory_bytes)
            _write(group.dirs[0] / "memory.swap.max", 0, optional=True)
            _write(group.dirs[0] / "pids.max", max_processes)
        else:
            memory, pids = group.dirs
            _write(memory / "memory.limit_in_bytes", memory_bytes)
            _write(memory / "memory.memsw.limit_in_bytes", memory_bytes, optional=True)
            _write(pids / "pids.max", max_processes)
    except OSError:
        for directory in group.dirs:
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise
    return group


def _write(path: Path, value: int, *, optional: bool = False) -> None:
    try:
        path.write_text(str(value), encoding="ascii")
    except OSError:
        if not optional:
            raise
