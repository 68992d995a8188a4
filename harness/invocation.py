"""Where a user's relative paths are taken from: the current directory, except inside Inspect's task-folder chdir.

Inspect changes into a task file's folder before it calls the task function and while the task runs, so when it
runs one of mara-bench's task files (``tasks/``, the package ``mara_bench``) a relative ``-T data=``,
``-T index=``, ``-T ids=<file>``, ``MARA_DATA_DIR``, ``MARA_INDEX``, ``MARA_CHECKPOINTS``, ``./checkpoints.yaml`` or
``local/<path>`` would be read from ``tasks/``. There they are taken from ``INVOCATION_DIR``, the directory captured
when this module is first imported: Inspect loads the package's entry point (``mara_bench.harness._registry``, which imports
this module first) at start-up, before it changes directory. Anywhere else (``mara``, the Python API, tests) the
current directory is the one the user means.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

INVOCATION_DIR = Path.cwd()
"""The working directory when the process started using mara-bench (before Inspect's ``chdir``)."""


@cache
def _task_folders() -> frozenset[Path]:
    """The folder holding mara-bench's task files (``tasks/``, the package ``mara_bench`` itself)."""
    spec = importlib.util.find_spec("mara_bench")
    origin = spec.origin if spec is not None else None
    return frozenset({Path(origin).resolve().parent} if origin else ())


def base_dir() -> Path:
    """The directory relative user paths are taken from (see the module docstring)."""
    current = Path.cwd()
    return INVOCATION_DIR if current.resolve() in _task_folders() else current


def user_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as the user meant it: ``~`` expanded, a relative path taken from ``base_dir()`` (normalised, so a
    log records ``/home/me/shared/data``, not ``/home/me/mara-bench/../shared/data``)."""
    expanded = Path(path).expanduser()
    return expanded if expanded.is_absolute() else Path(os.path.normpath(base_dir() / expanded))
