"""What ``mara train`` checks before any work (no model built, no file written): the task factory imports, the
recipe's model folder holds whole weights and a tokenizer, and the checkpoint ``--resume`` would load is whole.

Each problem is one ``ConfigError`` line naming the file or key and the fix. The checks read file headers only
(a safetensors header, a checkpoint's zip directory), so they cost milliseconds whatever the model's size.
"""

from __future__ import annotations

import importlib
import json
import struct
import zipfile
from pathlib import Path

from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.packaged_models import PackagedModelError, model_location
from mara_bench.trainer.config import TrainConfig

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model")
"""Any one of these makes a folder's tokenizer loadable (``tokenizer_config.json`` alone does not)."""


def check_inputs(config: TrainConfig, source: str) -> None:
    """Raise ``ConfigError`` when the recipe ``source`` names a task factory or a model folder that cannot work."""
    check_factory(config.task.factory, source)
    if not config.model.path:
        return
    try:
        location = Path(model_location(config.model.path))
    except PackagedModelError as err:
        raise ConfigError(f"{source}: model.path: {err}") from None
    if location.is_dir():
        check_model_folder(location, f"{source}: model.path")


def check_factory(factory: str, where: str) -> None:
    """The ``module:function`` task factory imports and names a callable."""
    module_name, _, function = factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(
            f"{where}: task.factory: cannot import {module_name!r} ({err}); "
            "name an importable module, e.g. trainer.tasks.toy:addition_task"
        ) from None
    if not callable(getattr(module, function, None)):
        raise ConfigError(
            f"{where}: task.factory: module {module_name!r} has no function {function!r}; "
            "name a function of that module"
        )


def check_model_folder(folder: Path, where: str) -> None:
    """``folder`` has a config, whole safetensors weights and a tokenizer."""
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{where}: {folder} has no config.json; point it at a Hugging Face model folder")
    for weights in sorted(folder.glob("*.safetensors")):
        problem = safetensors_problem(weights)
        if problem:
            raise ConfigError(
                f"{where}: {weights} is {problem}; copy or export the model again (a download or copy was cut)"
            )
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise ConfigError(
            f"{where}: {folder} has no tokenizer (none of {', '.join(TOKENIZER_FILES)}); "
            "copy the tokenizer files of its base model into it"
        )


def safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is not a whole safetensors file (its header read and its data's end checked), or ``None``."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            return f"truncated ({size} bytes, not even a header)"
        (header_length,) = struct.unpack("<Q", prefix)
        if header_length > size - 8:
            return f"truncated ({size:,} bytes; its header alone claims {header_length:,})"
        try:
            header = json.loads(handle.read(header_length))
        except ValueError:
            return "not a safetensors file (its header is not JSON)"
    ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    needed = 8 + header_length + max(ends, default=0)
    if size < needed:
        return f"truncated ({size:,} of {needed:,} bytes)"
    return None


def check_resume_state(state_file: Path) -> None:
    """The checkpoint state ``--resume`` loads is a whole ``torch.save`` archive."""
    try:
        with zipfile.ZipFile(state_file) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, OSError) as err:
        raise ConfigError(
            f"{state_file}: --resume: the checkpoint is truncated or corrupt ({err}); point "
            f"{state_file.parent.parent / 'latest'} at an earlier step_N, or start a new run without --resume"
        ) from None
