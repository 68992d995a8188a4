"""The call path of a task's ``-T`` arguments, measured by running it: ``.venv/bin/python tests/core/call_path.py``
imports Inspect's entry point (as every ``inspect`` command does), then calls a registered task function with its
``-T`` arguments -- by default ``aime2025`` with ``-T data=samples``, the path ``inspect eval mara_bench/aime2025 -T
data=samples`` takes up to its ``Task``; ``tests/core/call_path.py bamboogle system=matpo data=samples index=DIR``
follows another -- and follows every call between the package's files on the way (imports made on the way are
left out).

It prints the files entered (modules); the visits, each distinct call from a function of one file into a function
of another (a call repeated for every row counts once); the moves up, visits that climb a floor of the layering
(``tests/core/import_graph.py``'s contract); the returns, visits into a file the path had already been in; and how
many times the path looks up a system (``get_system``) or a benchmark (``get_benchmark``), sets a system up with
its options (``setup``) and checks option names (``check_names``).
It measures whichever checkout ``mara_bench`` is imported from (``PYTHONPATH=<checkout>``)."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from import_graph import CONTRACTS, FOLDERS, _place

COUNTED = ("get_system", "get_benchmark", "setup", "check_names")
"""Functions whose calls on the path are counted by name."""


@dataclass
class Trace:
    """What the traced call did, between the package's files (checkout paths)."""

    root: Path
    base: FrameType
    """The frame that starts the traced call: frames below it are not the path's."""
    files: set[str] = field(default_factory=set)
    visits: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(caller file, caller function, callee file, callee function) of each distinct call between files."""
    returns: int = 0
    calls: Counter[str] = field(default_factory=Counter)

    def path_of(self, frame: FrameType) -> str | None:
        """The checkout path of ``frame``'s file when it is one of the package's, else None."""
        file = Path(frame.f_code.co_filename)
        if file.suffix != ".py" or not file.resolve().is_relative_to(self.root):
            return None
        path = file.resolve().relative_to(self.root).as_posix()
        return path if path.split("/")[0] in FOLDERS else None

    def caller(self, frame: FrameType) -> FrameType | None:
        """The package frame nearest below ``frame`` on the stack (the one that called into it)."""
        below = frame.f_back
        while below is not None and self.path_of(below) is None:
            below = below.f_back
        return below

    def importing(self, frame: FrameType | None) -> bool:
        """Whether ``frame`` runs inside an import (a module's body between it and ``base`` on the stack)."""
        while frame is not None and frame is not self.base:
            if frame.f_code.co_name == "<module>":
                return True
            frame = frame.f_back
        return False

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or self.importing(frame):
            return
        path = self.path_of(frame)
        if path is None:
            return
        if frame.f_code.co_name in COUNTED:
            self.calls[frame.f_code.co_name] += 1
        below = self.caller(frame)
        other = self.path_of(below) if below is not None else None
        if below is not None and other is not None and other != path:
            visit = (other, below.f_code.co_name, path, frame.f_code.co_name)
            if visit not in self.visits:
                self.returns += path in self.files
                self.visits.append(visit)
        self.files.add(path)

    @property
    def moves_up(self) -> list[tuple[str, str, str, str]]:
        return [visit for visit in self.visits if _goes_up(visit[0], visit[2])]


def _goes_up(source: str, target: str) -> bool:
    """Whether a call from ``source`` into ``target`` climbs a floor in any contract."""
    for floors in CONTRACTS.values():
        placed, into = _place(source, floors), _place(target, floors)
        if placed is not None and into is not None and placed[1] != into[1] and into[0] < placed[0]:
            return True
    return False


def trace_task_creation(task: str = "aime2025", **arguments: Any) -> Trace:
    """Trace the creation of the registered task ``task`` with the ``-T`` ``arguments`` (default: ``aime2025``
    with ``data=samples``), the entry point imported first."""
    import mara_bench
    import mara_bench.harness._registry  # noqa: F401  (what Inspect imports first)
    from mara_bench.catalog import TASK_FILES

    (task_function,) = [getattr(module, task) for module in TASK_FILES if hasattr(module, task)]
    trace = Trace(Path(mara_bench.__file__).resolve().parents[1], sys._getframe())
    sys.setprofile(trace)
    try:
        task_function(**(arguments or {"data": "samples"}))
    finally:
        sys.setprofile(None)
    return trace


if __name__ == "__main__":
    name, *pairs = sys.argv[1:] or ["aime2025"]
    found = trace_task_creation(name, **dict(pair.split("=", 1) for pair in pairs))
    print(f"checkout: {found.root}")
    print(f"modules entered: {len(found.files)}")
    print(f"visits (distinct calls into another file): {len(found.visits)}")
    print(f"moves up a floor: {len(found.moves_up)}")
    for source, caller, target, callee in found.moves_up:
        print(f"  {source}:{caller} -> {target}:{callee}")
    print(f"returns (visits into a file already entered): {found.returns}")
    for name in COUNTED:
        print(f"calls of {name}: {found.calls[name]}")
