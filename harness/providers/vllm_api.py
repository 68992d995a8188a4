"""``local/`` on vLLM: Inspect's own vLLM provider started on the resolved checkpoint (``-M backend=vllm``).

The ``-M`` options become ``vllm serve`` arguments (``vllm_server_args``), the dtype always explicit
(``mara_bench.harness.providers.loading.explicit_dtype``: vLLM's own ``auto`` runs a float32 checkpoint in bfloat16 on
its CPU build); the server listens on the loopback address only (Inspect's default is every address) and takes
a key made for this run (Inspect's default is a fixed one). The provider reports the ``local/`` name the user
gave, not the served base model's.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
from inspect_ai.model import GenerateConfig, ModelAPI

from mara_bench.core.inspect_compat import VLLMAPI
from mara_bench.harness.providers.loading import explicit_dtype
from mara_bench.harness.providers.local_options import LocalOptions
from mara_bench.harness.providers.resolve import ResolvedCheckpoint

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
"""The only address the server ``local/`` starts listens on."""


def vllm_model(
    model_name: str, checkpoint: ResolvedCheckpoint, options: LocalOptions, config: GenerateConfig
) -> ModelAPI:
    if options.return_token_ids:
        raise ValueError(
            "local/: -M return_token_ids=true needs -M backend=hf (the vLLM server returns text)"
        )
    served = f"{checkpoint.model}:{checkpoint.adapter}" if checkpoint.adapter else checkpoint.model
    _vllm_command_on_path()
    server_args = vllm_server_args(checkpoint, options)
    logger.info("local/%s: vLLM, %s in %s", model_name, served, server_args["dtype"])
    return LocalVLLMAPI(
        model_name,
        served,
        checkpoint.tokenizer,
        config=config,
        api_key=secrets.token_urlsafe(24),
        host=LOOPBACK,
        **server_args,
    )


def _vllm_command_on_path() -> None:
    """Inspect starts the server as ``vllm serve``: when this interpreter's environment has the ``vllm`` command
    but the shell did not put it on ``PATH`` (``.venv-vllm/bin/inspect`` run without activating it), add it."""
    bin_dir = Path(sys.executable).parent
    if shutil.which("vllm") is None and (bin_dir / "vllm").is_file():
        os.environ["PATH"] = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])


def vllm_server_args(checkpoint: ResolvedCheckpoint, options: LocalOptions) -> dict[str, Any]:
    """The ``vllm serve`` arguments for the ``-M`` options (Inspect turns ``a_b=v`` into ``--a-b v``)."""
    thinking = (
        None if options.enable_thinking is None else json.dumps({"enable_thinking": options.enable_thinking})
    )
    own_tokenizer = checkpoint.tokenizer in (checkpoint.model, checkpoint.adapter)
    candidates = {
        "dtype": explicit_dtype(options.dtype, _engine_device(options.device), checkpoint.model),
        "device": _cuda_devices(options.device),
        "max_model_len": options.max_model_len,
        "tensor_parallel_size": options.tensor_parallel_size,
        "seed": options.seed,
        "chat_template": checkpoint.chat_template,
        "tokenizer": None if own_tokenizer else checkpoint.tokenizer,
        "default_chat_template_kwargs": thinking,
        "enforce_eager": None
        if torch.cuda.is_available()
        else True,  # vLLM's CPU build: no graph compilation
    }
    return {name: value for name, value in candidates.items() if value is not None}


def _engine_device(device: str | None) -> str:
    """``cpu`` where vLLM runs its CPU build (asked for, or no CUDA GPU), else ``cuda``."""
    return "cpu" if device == "cpu" or not torch.cuda.is_available() else "cuda"


def _cuda_devices(device: str | None) -> str | None:
    """``cuda:1`` / ``1`` / ``0,1`` as the GPU list vLLM is started on (``CUDA_VISIBLE_DEVICES``); ``cpu`` on a
    machine without a CUDA GPU is vLLM's CPU build, which needs no device list."""
    if device is None or device == "cuda" or (device == "cpu" and not torch.cuda.is_available()):
        return None
    devices = device.removeprefix("cuda:")
    if not all(part.strip().isdigit() for part in devices.split(",")):
        raise ValueError(
            f"local/: -M device={device} is not a CUDA device for the vLLM backend; "
            "give cuda:N or a GPU list like 0,1 (or -M backend=hf for the CPU)"
        )
    return devices


class LocalVLLMAPI(VLLMAPI):
    """Inspect's own vLLM provider (server, LoRA, retries), reporting the ``local/`` name the user gave.

    Inspect's provider renames itself to the served base model once its server starts; logs and usage then
    name ``local/<model_name>`` throughout, as on the transformers backend.
    """

    def __init__(self, model_name: str, served: str, tokenizer_path: str | None = None, **kwargs: Any):
        super().__init__(model_name=served, **kwargs)
        self.local_name = self.model_name = model_name
        self.tokenizer_path = tokenizer_path

    @functools.cached_property
    def tokenizer(self) -> Any:
        """The served model's tokenizer (loaded on first use; systems count budget tokens with it)."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.tokenizer_path) if self.tokenizer_path else None

    def _resolve_server(self) -> None:
        super()._resolve_server()
        self.model_name = self.local_name
