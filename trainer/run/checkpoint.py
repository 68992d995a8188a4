"""Atomic checkpoints that resume exactly, and HF-format exports the ``local/`` provider loads.

Layout of a run directory::

    <run>/checkpoints/step_N/state.pt   model, KL reference, optimizer, scheduler, critic, RNG, data cursor, step, config
    <run>/checkpoints/latest            text "step_N": the newest COMPLETE checkpoint
    <run>/exports/step_N/               save_pretrained model + tokenizer (``local/<run>`` picks the highest N)

Every directory is written under a temporary name (``.tmp-step_N-<pid>``), its files and itself fsynced, then
renamed into place; the ``latest`` marker is replaced (write, fsync, rename) only after both renames. A process
killed at any point therefore leaves the previous checkpoint and its marker intact; the temporary folders it
leaves are removed at the next save of the run.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

CHECKPOINTS = "checkpoints"
EXPORTS = "exports"
LATEST = "latest"
STATE_FILE = "state.pt"


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_dir_atomically(final: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_dir)``, fsync what it wrote, then rename ``tmp_dir`` to ``final`` (replacing it)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".tmp-{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    write(tmp)
    for file in tmp.rglob("*"):
        if file.is_file():
            _fsync_path(file)
    _fsync_path(tmp)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_path(final.parent)
    return final


def write_marker(path: Path, text: str) -> None:
    """Replace the small text file ``path`` atomically."""
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_path(path.parent)


def rng_state() -> dict[str, Any]:
    """The state of every random generator the trainer draws from."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def remove_stale_temporaries(run_dir: str | Path) -> list[Path]:
    """Remove the ``.tmp-<name>-<pid>`` folders and files a killed trainer left in ``checkpoints/`` and
    ``exports/`` (those of a process that is still alive are kept); returns what was removed."""
    removed = []
    for parent in (Path(run_dir) / CHECKPOINTS, Path(run_dir) / EXPORTS):
        for path in parent.glob(".tmp-*-*") if parent.is_dir() else ():
            pid = path.name.rsplit("-", 1)[1]
            if pid.isdigit() and not _alive(int(pid)):
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def save_checkpoint(
    run_dir: str | Path, step: int, state: dict[str, Any], export: Callable[[Path], None] | None = None
) -> Path:
    """Write ``state`` (plus RNG) as ``checkpoints/step_N``, the export via ``export(dir)``, then the marker;
    first remove what a killed trainer left half-written (``remove_stale_temporaries``)."""
    run = Path(run_dir)
    remove_stale_temporaries(run)
    name = f"step_{step}"
    payload = {**state, "step": step, "rng": rng_state()}
    checkpoint = write_dir_atomically(
        run / CHECKPOINTS / name, lambda tmp: torch.save(payload, tmp / STATE_FILE)
    )
    if export is not None:
        write_dir_atomically(run / EXPORTS / name, export)
    write_marker(run / CHECKPOINTS / LATEST, name)
    return checkpoint


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint the ``latest`` marker names, or ``None`` when the run has none."""
    marker = Path(run_dir) / CHECKPOINTS / LATEST
    if not marker.exists():
        return None
    path = marker.parent / marker.read_text().strip()
    if not (path / STATE_FILE).is_file():
        raise FileNotFoundError(f"{marker} names {path.name} but {path / STATE_FILE} is missing")
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The state saved in checkpoint directory ``path`` (RNG not yet applied: see ``set_rng_state``)."""
    return torch.load(Path(path) / STATE_FILE, weights_only=False, map_location="cpu")
