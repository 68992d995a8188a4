"""One line for a task that ``inspect eval`` cannot find, in place of Inspect's bare "No inspect tasks were found",
"Task named 'x' not found" or the traceback of its task loader (a ``FileNotFoundError`` for a relative task file
run from another folder, a ``NotImplementedError`` for a missing absolute one).

``explain(err)`` reads the task specs from the command line (``inspect eval SPEC... --option ...``) and says which
one is wrong and the closest valid name: a missing file (and the folder it was looked for in), a task name that
no file declares, or a ``mara_bench/<name>`` that is not a mara-bench task. ``mara_bench.harness.prerequisites`` calls it from
the exception hook, so it runs only when a command is already ending.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mara_bench.core.typed_config import did_you_mean
from mara_bench.harness.invocation import INVOCATION_DIR

TASK_COMMANDS = frozenset({"eval", "eval-set"})
PACKAGE = "mara_bench"
NO_TASKS = "No inspect tasks were found"
NAMED_TASK = "Task named '"


def explain(err: BaseException, argv: list[str] | None = None) -> str | None:
    """The one line for ``err`` when it is Inspect failing to find a task the command named, else ``None``."""
    specs = task_specs(sys.argv if argv is None else argv)
    if not specs:
        return None
    message = str(getattr(err, "message", err))
    if not (NO_TASKS in message or message.startswith(NAMED_TASK) or _raised_by_inspect_loader(err)):
        return None
    for spec in specs:
        if (problem := spec_problem(spec)) is not None:
            return problem
    return None


def task_specs(argv: list[str]) -> list[str]:
    """The task arguments of ``inspect eval|eval-set SPEC... [options]`` (empty for any other command)."""
    if len(argv) < 3 or argv[1] not in TASK_COMMANDS:
        return []
    specs = []
    for arg in argv[2:]:
        if arg.startswith("-"):
            break
        specs.append(arg)
    return specs


def spec_problem(spec: str) -> str | None:
    """What is wrong with one task spec (``file.py[@name]``, ``mara_bench/<name>`` or a task name), or ``None``."""
    from mara_bench.harness.datasets import BENCHMARKS

    names = list(BENCHMARKS)
    if spec.startswith(f"{PACKAGE}/"):
        name = spec.removeprefix(f"{PACKAGE}/")
        if name in names:
            return None
        return f"{spec}: no such mara-bench task; {did_you_mean(name, names)}`mara tasks` lists them"
    file, _, name = spec.partition("@")
    if not file.endswith(".py"):
        if file in names:
            return None
        return f"{spec}: no such task; {did_you_mean(file, names)}`mara tasks` lists them"
    path = Path(file).expanduser()
    where = path if path.is_absolute() else INVOCATION_DIR / path
    if not where.is_file():
        near = _nearest_file(where)
        hint = f"did you mean {str(path.parent / near)!r}? " if near else ""
        return (
            f"{file}: no such task file (looked in {where.parent}); {hint}give its path from this folder, "
            f"or the installed name {PACKAGE}/{name or '<task>'} (`mara tasks` lists them)"
        )
    if name and name not in names:
        return f"{spec}: {file} declares no task {name!r}; {did_you_mean(name, names)}`mara tasks` lists them"
    return None


def _nearest_file(where: Path) -> str | None:
    """The Python file next to where a missing task file was looked for whose name is closest to it."""
    import difflib

    if not where.parent.is_dir():
        return None
    close = difflib.get_close_matches(
        where.name, [p.name for p in where.parent.glob("*.py")], n=1, cutoff=0.6
    )
    return close[0] if close else None


def _raised_by_inspect_loader(err: BaseException) -> bool:
    """Whether ``err`` came out of Inspect's task loader."""
    traceback = err.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename.endswith("inspect_ai/_eval/loader.py"):
            return True
        traceback = traceback.tb_next
    return False
