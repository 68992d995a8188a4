"""The checkpoint registry: short names for checkpoints, so suites can say ``--model local/marsrl-vc``.

The registry is a YAML file named by ``MARA_CHECKPOINTS``, else ``checkpoints.yaml`` in the directory the command ran
in::

    marsrl-vc:
      path: runs/marsrl-vc            # a model directory, a trainer run directory, or an HF model id
      notes: V-C system trained with MarsRL, 300 steps
    mars-lora:
      adapter: runs/mars-lora/exports/step_200   # a LoRA adapter directory
      base: Qwen/Qwen3-8B                         # optional: defaults to the adapter's own base model
      merge: true                                 # optional: merge the adapter into the base when loading
      chat_template: templates/qwen3.jinja        # optional: a Jinja file overriding the tokenizer's template

Relative paths are relative to the registry file. Every entry needs ``path`` or ``adapter`` (not both).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from mara_bench.harness.invocation import user_path

REGISTRY_ENV = "MARA_CHECKPOINTS"
REGISTRY_FILE = "checkpoints.yaml"
FIELDS = ("path", "adapter", "base", "merge", "chat_template", "notes")


class RegistryError(ValueError):
    """The checkpoint registry file is missing or malformed."""


@dataclass(frozen=True)
class CheckpointEntry:
    """One registered checkpoint."""

    name: str
    path: str | None = None
    """Model directory, trainer run directory or HF id (exclusive with ``adapter``)."""
    adapter: str | None = None
    """LoRA adapter directory."""
    base: str | None = None
    """Base model of ``adapter`` (default: the adapter's ``base_model_name_or_path``)."""
    merge: bool | None = None
    chat_template: str | None = None
    """Path of a Jinja chat template file."""
    notes: str = ""


def registry_path() -> Path | None:
    """The registry file in effect: ``$MARA_CHECKPOINTS`` (must exist), else ``./checkpoints.yaml`` if present.

    Both are taken from the directory the command ran in (``mara_bench.harness.invocation``), not Inspect's task folder.
    """
    named = os.environ.get(REGISTRY_ENV)
    if named:
        path = user_path(named)
        if not path.is_file():
            raise RegistryError(
                f"{REGISTRY_ENV}={named} is not a file (looked for {path}): point it at a checkpoints YAML file"
            )
        return path
    default = user_path(REGISTRY_FILE)
    return default if default.is_file() else None


def load_registry(path: str | Path | None = None) -> dict[str, CheckpointEntry]:
    """Read the registry at ``path`` (default: ``registry_path()``); no registry file gives an empty registry."""
    file = Path(path) if path is not None else registry_path()
    if file is None:
        return {}
    try:
        data = yaml.safe_load(file.read_text()) or {}
    except UnicodeDecodeError as err:
        raise RegistryError(
            f"{file}: not a text file ({type(err).__name__}); point {REGISTRY_ENV} at a checkpoints YAML file"
        ) from None
    except yaml.YAMLError as err:
        raise RegistryError(f"{file}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise RegistryError(
            f"{file}: expected a mapping of checkpoint name -> fields, got {type(data).__name__}"
        )
    return {str(name): _entry(file, str(name), fields) for name, fields in data.items()}


def lookup(name: str) -> CheckpointEntry | None:
    """The registered checkpoint called ``name``, or ``None``."""
    return load_registry().get(name)


def _entry(file: Path, name: str, fields: object) -> CheckpointEntry:
    where = f"{file}: checkpoint {name!r}"
    if not isinstance(fields, dict):
        raise RegistryError(f"{where}: expected a mapping of fields ({', '.join(FIELDS)})")
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise RegistryError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known fields: {', '.join(FIELDS)}"
        )
    if bool(fields.get("path")) == bool(fields.get("adapter")):
        raise RegistryError(f"{where}: give exactly one of 'path' (a model) or 'adapter' (a LoRA adapter)")
    if fields.get("base") and not fields.get("adapter"):
        raise RegistryError(f"{where}: 'base' only applies with 'adapter'")
    merge = fields.get("merge")
    if merge is not None and not isinstance(merge, bool):
        raise RegistryError(f"{where}: 'merge' must be true or false, got {merge!r}")
    return CheckpointEntry(
        name=name,
        path=_relative_to(file, fields.get("path")),
        adapter=_relative_to(file, fields.get("adapter")),
        base=_relative_to(file, fields.get("base")),
        merge=merge,
        chat_template=_relative_to(file, fields.get("chat_template")),
        notes=str(fields.get("notes") or ""),
    )


def _relative_to(file: Path, value: object) -> str | None:
    """A path relative to the registry file; a value that is not an existing path (an HF id) stays as it is."""
    if value is None:
        return None
    text = os.path.expanduser(str(value))
    candidate = Path(text) if os.path.isabs(text) else file.parent / text
    return str(candidate) if candidate.exists() else text
