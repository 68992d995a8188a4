"""Load a resolved checkpoint with ``transformers`` (and ``peft`` for LoRA adapters), ready for generation.

A checkpoint that cannot be loaded -- damaged or truncated weight files included -- is a ``CheckpointError`` naming
the directory and its weight files.
"""

from __future__ import annotations

import json
import logging
import pickle
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mara_bench.harness.providers.resolve import CheckpointError, ResolvedCheckpoint

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt")
"""Files holding weights in a model directory."""


@dataclass
class LoadedModel:
    """A model and tokenizer ready for ``mara_bench.harness.providers.generation.generate``."""

    model: Any
    tokenizer: Any
    checkpoint: ResolvedCheckpoint


@contextmanager
def peft_wrapping() -> Iterator[None]:
    """Silence the FutureWarning peft's wrapping raises on every model (it reads transformers' deprecated
    ``is_gradient_checkpointing``): a warning about library internals, on a working default."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


def default_device() -> str:
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def explicit_dtype(name: str, device: str, model_dir: str) -> str:
    """``-M dtype`` with ``auto`` resolved, the same on every engine: float32 on the CPU (half precision is slow
    there, and vLLM's CPU build would run a float32 checkpoint in bfloat16), else the checkpoint's own
    (``config.json``'s ``dtype`` / ``torch_dtype``; float32 where it names none)."""
    if name != "auto":
        if name not in DTYPES:
            raise CheckpointError(f"unknown dtype {name!r}; use one of auto, {', '.join(DTYPES)}")
        return name
    if device == "cpu":
        return "float32"
    config = Path(model_dir) / "config.json"
    data = json.loads(config.read_text()) if config.is_file() else {}
    own = data.get("dtype") or data.get("torch_dtype")
    return own if own in DTYPES else "float32"


def load_checkpoint(
    checkpoint: ResolvedCheckpoint, *, dtype: str = "auto", device: str | None = None, merge: bool = True
) -> LoadedModel:
    """Load tokenizer, model and (applied, or merged when ``merge``) LoRA adapter of ``checkpoint``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or default_device()
    tokenizer = AutoTokenizer.from_pretrained(checkpoint.tokenizer)
    if checkpoint.chat_template is not None:
        tokenizer.chat_template = Path(checkpoint.chat_template).read_text()
    if not tokenizer.chat_template:
        raise CheckpointError(_NO_TEMPLATE.format(tokenizer=checkpoint.tokenizer))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    from safetensors import SafetensorError

    try:
        chosen = explicit_dtype(dtype, device, checkpoint.model)
        logger.info("local/: transformers, %s on %s in %s", checkpoint.model, device, chosen)
        model = AutoModelForCausalLM.from_pretrained(checkpoint.model, dtype=DTYPES[chosen])
    except (OSError, ValueError) as err:
        raise CheckpointError(f"cannot load a causal LM from {checkpoint.model}: {err}") from err
    except (SafetensorError, pickle.UnpicklingError, EOFError) as err:
        raise CheckpointError(
            f"{_weight_files(checkpoint.model)}: damaged or incomplete weights ({err}); "
            "re-export or re-download the checkpoint"
        ) from err
    vocab = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > vocab:
        raise CheckpointError(
            f"the tokenizer in {checkpoint.tokenizer} has {len(tokenizer)} tokens but the model in "
            f"{checkpoint.model} embeds only {vocab}: they do not belong together"
        )
    if checkpoint.adapter is not None:
        model = _apply_adapter(model, checkpoint, merge=merge)
    return LoadedModel(model=model.to(device).eval(), tokenizer=tokenizer, checkpoint=checkpoint)


TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
"""Files beside a tokenizer that hold its chat template (else ``tokenizer_config.json``'s ``chat_template``)."""


def check_before_loading(checkpoint: ResolvedCheckpoint) -> None:
    """What can be checked of ``checkpoint`` without loading it, each problem a ``CheckpointError``: the header of
    every ``*.safetensors`` file (model and adapter; no tensor is read), and that the tokenizer has a chat template
    (or one is given)."""
    from safetensors import SafetensorError, safe_open

    for directory in (checkpoint.model, checkpoint.adapter):
        if directory is None or not Path(directory).is_dir():
            continue
        for path in sorted(Path(directory).glob("*.safetensors")):
            try:
                safe_open(str(path), framework="pt")
            except (SafetensorError, OSError) as err:
                raise CheckpointError(
                    f"{path}: damaged or incomplete weights ({err}); re-export or re-download the checkpoint"
                ) from err
    if checkpoint.chat_template is None and not _has_chat_template(Path(checkpoint.tokenizer)):
        raise CheckpointError(_NO_TEMPLATE.format(tokenizer=checkpoint.tokenizer))


_NO_TEMPLATE = (
    "the tokenizer in {tokenizer} has no chat template; pass -M chat_template=FILE "
    "or set chat_template: in checkpoints.yaml"
)


def _has_chat_template(tokenizer: Path) -> bool:
    """Whether the tokenizer folder holds a chat template (``True`` where it is not a folder: left to the load)."""
    if not tokenizer.is_dir() or any((tokenizer / name).is_file() for name in TEMPLATE_FILES):
        return True
    config = tokenizer / "tokenizer_config.json"
    return config.is_file() and bool(json.loads(config.read_text()).get("chat_template"))


def _weight_files(model: str) -> str:
    """The weight files of model directory ``model`` (the directory itself when it lists none)."""
    directory = Path(model)
    found = sorted(str(path) for pattern in WEIGHT_PATTERNS for path in directory.glob(pattern))
    return ", ".join(found) or model


def _apply_adapter(model: Any, checkpoint: ResolvedCheckpoint, *, merge: bool) -> Any:
    from peft import PeftModel
    from safetensors import SafetensorError

    try:
        with peft_wrapping():
            adapted = PeftModel.from_pretrained(model, checkpoint.adapter)
    except (RuntimeError, ValueError, KeyError) as err:
        raise CheckpointError(
            f"LoRA adapter {checkpoint.adapter} does not fit base model {checkpoint.model}: {err}"
        ) from err
    except (SafetensorError, pickle.UnpicklingError, EOFError) as err:
        raise CheckpointError(
            f"{_weight_files(checkpoint.adapter)}: damaged or incomplete adapter weights ({err}); "
            "re-export or re-download the adapter"
        ) from err
    return adapted.merge_and_unload() if merge else adapted
