"""Resolve a ``local/<x>`` model name to the files to load: model weights, tokenizer, LoRA adapter, chat template.

``<x>`` may be, in this order of precedence:

1. a name in the checkpoint registry (``mara_bench.harness.checkpoints``: ``MARA_CHECKPOINTS`` or ``./checkpoints.yaml``);
2. a directory (relative: from the directory the command ran in): an HF-format model (``config.json`` with a
   ``model_type``), a LoRA adapter (``adapter_config.json``, loaded on its base model), or a trainer run directory
   -- its latest export ``<run>/exports/step_N/`` (or ``<run>/step_N/``); ``<run>/step_N`` also names the export
   ``<run>/exports/step_N``;
3. a packaged model's name (``smollm2-135m``: ``mara_bench.harness.packaged_models``, installed by ``mara models get``);
4. a Hugging Face model id, taken from the local HF cache only; it is downloaded only with ``allow_download``.

``<x>/adapters/<role>`` names one role's LoRA adapter of a checkpoint trained with one adapter per role
(``mara_bench.trainer.learner.adapters``): ``<x>`` a registry name, a run directory (its latest export), ``<run>/step_N`` or
an export directory, holding ``adapters/<role>/`` beside ``base.json``. So one registry entry serves every role's
adapter, each on the one base its ``adapter_config.json`` names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from mara_bench.harness.checkpoints import CheckpointEntry, lookup
from mara_bench.harness.invocation import user_path
from mara_bench.harness.packaged_models import PACKAGED_MODELS, PackagedModelError, installed_model

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
STEP_DIR = re.compile(r"^step_(\d+)$")
EXPORTS = "exports"
ADAPTERS = "adapters"
ROLE_ADAPTER = re.compile(r"^(?P<checkpoint>.+)/adapters/(?P<role>[^/]+)/?$")


class CheckpointError(ValueError):
    """A ``local/`` model name that cannot be resolved or loaded; the message says what to fix."""


@dataclass(frozen=True)
class ResolvedCheckpoint:
    """The files behind one ``local/`` model name."""

    model: str
    """Directory (or cached snapshot) holding the model weights -- the base model when ``adapter`` is set."""
    tokenizer: str
    """Directory holding the tokenizer."""
    adapter: str | None = None
    """LoRA adapter directory to apply on ``model``."""
    chat_template: str | None = None
    """Chat template file overriding the tokenizer's own."""
    merge: bool | None = None
    """Registry preference for merging the adapter (``None``: the caller decides)."""
    source: str = ""
    """How the name was resolved: ``model``, ``run``, ``adapter``, ``packaged:<n>``, ``hf-cache``, ``hf-download``,
    ``registry:<n>``."""
    notes: str = ""


def resolve_checkpoint(
    name: str,
    *,
    base: str | None = None,
    tokenizer: str | None = None,
    chat_template: str | None = None,
    allow_download: bool = False,
) -> ResolvedCheckpoint:
    """Resolve ``name`` (registry name, directory, or HF id); ``base``/``tokenizer``/``chat_template`` override."""
    entry = lookup(name)
    role_adapter = ROLE_ADAPTER.match(name) if entry is None and not user_path(name).is_dir() else None
    if entry is not None:
        resolved = _resolve_entry(entry, base=base, allow_download=allow_download)
    elif role_adapter is not None:
        checkpoint, role = role_adapter.group("checkpoint", "role")
        resolved = _resolve_role_adapter(checkpoint, role, base=base, allow_download=allow_download)
    else:
        resolved = _resolve_location(name, base=base, allow_download=allow_download)
    tokenizer_dir = (
        _existing_dir(tokenizer, "tokenizer") if tokenizer is not None else Path(resolved.tokenizer)
    )
    resolved = replace(resolved, tokenizer=_require_tokenizer(tokenizer_dir))
    if chat_template is not None:
        template = user_path(chat_template)
        if not template.is_file():
            raise CheckpointError(
                f"chat template file {chat_template} does not exist (looked for {template})"
            )
        resolved = replace(resolved, chat_template=str(template))
    return resolved


def latest_export(run_dir: str | Path) -> Path | None:
    """The highest-numbered ``exports/step_N`` of a trainer run directory (else ``step_N``), or ``None``."""
    run = Path(run_dir)
    for parent in (run / EXPORTS, run):
        steps = [
            (int(m.group(1)), p)
            for p in parent.glob("step_*")
            if p.is_dir() and (m := STEP_DIR.match(p.name))
        ]
        if steps:
            return max(steps)[1]
    return None


def _resolve_role_adapter(
    checkpoint: str, role: str, *, base: str | None, allow_download: bool
) -> ResolvedCheckpoint:
    """Role ``role``'s adapter of ``checkpoint`` (a registry name, run, ``<run>/step_N`` or export directory)."""
    entry = lookup(checkpoint)
    location = (entry.path or entry.adapter) if entry is not None else checkpoint
    assert location is not None
    root = user_path(location)
    stepped = root.parent / EXPORTS / root.name
    if (root / ADAPTERS).is_dir():
        export = root
    elif STEP_DIR.match(root.name) and (stepped / ADAPTERS).is_dir():
        export = stepped
    else:
        export = latest_export(root) if root.is_dir() else None
    if export is None or not (export / ADAPTERS).is_dir():
        raise CheckpointError(
            f"{checkpoint}/{ADAPTERS}/{role}: {checkpoint} is no checkpoint with per-role adapters "
            f"(an export holding {ADAPTERS}/<role>/, or a run or registry name whose latest export does)"
        )
    folder = export / ADAPTERS / role
    if not (folder / "adapter_config.json").is_file():
        roles = sorted(p.name for p in (export / ADAPTERS).iterdir() if p.is_dir())
        raise CheckpointError(
            f"{checkpoint}/{ADAPTERS}/{role}: {export} has no adapter for role {role!r}; its roles: {', '.join(roles)}"
        )
    resolved = _resolve_adapter(
        folder, base=base or (entry.base if entry is not None else None), allow_download=allow_download
    )
    source = f"registry:{entry.name}" if entry is not None else "run"
    return replace(resolved, source=f"{source}:{ADAPTERS}/{role}")


def _resolve_entry(entry: CheckpointEntry, *, base: str | None, allow_download: bool) -> ResolvedCheckpoint:
    target = entry.path or entry.adapter
    assert target is not None
    resolved = _resolve_location(target, base=base or entry.base, allow_download=allow_download)
    if entry.adapter and resolved.adapter is None:
        raise CheckpointError(
            f"registry entry {entry.name!r}: 'adapter' {entry.adapter} is not a LoRA adapter"
        )
    template = entry.chat_template
    if template is not None and not Path(template).is_file():
        raise CheckpointError(f"registry entry {entry.name!r}: chat_template file {template} does not exist")
    return replace(
        resolved,
        chat_template=template or resolved.chat_template,
        merge=entry.merge,
        source=f"registry:{entry.name}",
        notes=entry.notes,
    )


def _resolve_location(name: str, *, base: str | None, allow_download: bool) -> ResolvedCheckpoint:
    path = user_path(name)
    if path.is_dir():
        return _resolve_dir(path, base=base, allow_download=allow_download)
    if path.exists():
        raise CheckpointError(
            f"{name} is a file; local/ needs a model directory, a run directory or an HF id"
        )
    exported = path.parent / EXPORTS / path.name
    if STEP_DIR.match(path.name) and exported.is_dir():  # <run>/step_N names the export <run>/exports/step_N
        return _resolve_dir(exported, base=base, allow_download=allow_download)
    if _looks_like_path(name):
        raise CheckpointError(
            f"no such directory: {name} (give a model directory, a run directory or an HF id)"
        )
    if name in PACKAGED_MODELS:
        try:
            installed = installed_model(name)
        except PackagedModelError as err:
            raise CheckpointError(str(err)) from err
        return replace(_resolve_dir(installed, base=base, allow_download=False), source=f"packaged:{name}")
    return _resolve_hub_id(name, allow_download=allow_download)


def _resolve_dir(path: Path, *, base: str | None, allow_download: bool) -> ResolvedCheckpoint:
    if (path / "adapter_config.json").is_file():
        return _resolve_adapter(path, base=base, allow_download=allow_download)
    if _is_hf_model(path):
        return ResolvedCheckpoint(model=str(path), tokenizer=str(path), source="model")
    export = latest_export(path)
    if export is None:
        raise CheckpointError(
            f"{path} is not a model directory: it has no HF model config.json (with a model_type), "
            f"adapter_config.json (LoRA adapter), {EXPORTS}/step_N/ or step_N/ (trainer run)"
        )
    if (export / ADAPTERS).is_dir() and not _is_hf_model(export):
        roles = sorted(p.name for p in (export / ADAPTERS).iterdir() if p.is_dir())
        raise CheckpointError(
            f"trainer run {path}: its latest export {export} holds one LoRA adapter per role "
            f"({', '.join(roles)}); name one: {path}/{ADAPTERS}/<role>"
        )
    if not (_is_hf_model(export) or (export / "adapter_config.json").is_file()):
        raise CheckpointError(
            f"trainer run {path}: its latest export {export} has no config.json or adapter_config.json"
        )
    return replace(_resolve_dir(export, base=base, allow_download=allow_download), source="run")


def _resolve_adapter(path: Path, *, base: str | None, allow_download: bool) -> ResolvedCheckpoint:
    try:
        adapter_config = json.loads((path / "adapter_config.json").read_text())
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{path}/adapter_config.json is not valid JSON: {err}") from err
    base_name = base or adapter_config.get("base_model_name_or_path")
    if not base_name:
        raise CheckpointError(
            f"LoRA adapter {path} names no base model: pass -M base=MODEL (or base: in the registry)"
        )
    base_model = _resolve_location(str(base_name), base=None, allow_download=allow_download)
    if base_model.adapter is not None:
        raise CheckpointError(
            f"the base {base_name} of LoRA adapter {path} is itself an adapter; give a full model"
        )
    has_tokenizer = any((path / f).is_file() for f in TOKENIZER_FILES)
    return ResolvedCheckpoint(
        model=base_model.model,
        tokenizer=str(path) if has_tokenizer else base_model.tokenizer,
        adapter=str(path),
        source="adapter",
    )


def _resolve_hub_id(name: str, *, allow_download: bool) -> ResolvedCheckpoint:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        snapshot, source = snapshot_download(name, local_files_only=True), "hf-cache"
    except LocalEntryNotFoundError as err:
        if not allow_download:
            raise CheckpointError(
                f"{name!r} is not a registered name, not a directory, and not in the local Hugging Face cache; "
                "give a model directory or run directory, register it in checkpoints.yaml, or pass "
                "-M allow_download=true to download it"
            ) from err
        snapshot, source = snapshot_download(name), "hf-download"
    except HFValidationError as err:
        raise CheckpointError(
            f"{name!r} is neither a directory nor a valid Hugging Face model id: {err}"
        ) from err
    resolved = _resolve_dir(Path(snapshot), base=None, allow_download=allow_download)
    return replace(resolved, source=source)


def _require_tokenizer(path: Path) -> str:
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise CheckpointError(
            f"{path} has no tokenizer ({' / '.join(TOKENIZER_FILES)}); save one there or pass -M tokenizer=DIR"
        )
    return str(path)


def _existing_dir(name: str, what: str) -> Path:
    path = user_path(name)
    if not path.is_dir():
        raise CheckpointError(f"{what} directory {name} does not exist")
    return path


def _is_hf_model(path: Path) -> bool:
    """Whether ``path`` holds an HF model config (a trainer run's own ``config.json`` has no ``model_type``)."""
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text())
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{config} is not valid JSON: {err}") from err
    return isinstance(data, dict) and "model_type" in data


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name
