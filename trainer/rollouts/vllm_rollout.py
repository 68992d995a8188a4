"""Rollouts with vLLM (a GPU, or its CPU build): an in-process vLLM engine that carries the live policy weights.

``rollout.backend`` picks the generator the policy ``Chat`` uses, by the ``local/`` provider's own rule
(``mara_bench.harness.providers.backends.choose_backend``): ``auto`` takes vLLM when the package is installed (its CUDA or
CPU build) and the run's expected tokens pay for its start-up (by the checkpoint's size where no measured cost
applies), else transformers; ``vllm`` without the package is an error naming
the install command; ``hf`` is always transformers.

``VLLMGenerator`` honours the ``mara_bench.harness.providers.generation`` contract, so the rest of the trainer cannot tell the
two apart: the prompts are the same ``render_prompt`` token ids, each row keeps its own ``Sampling``, and each
result is a ``Completion`` whose response ids end with the end-of-turn token and whose logprobs are under the
model's UNMODIFIED distribution (``logprobs_mode="raw_logprobs"``). A row without a seed gets one drawn from
torch's generator, which the trainer reseeds every step, so a resumed run samples what an uninterrupted one
would. The engine is colocated: one per rank, in the rank's own process (vLLM's ``external_launcher``), loaded
from the policy's checkpoint; ``sync`` copies the current policy parameters into it before each step's rollout
and drops its prefix cache, whose entries were computed with the old weights.

Under per-role LoRA adapters (``EngineAdapters``) the engine holds the frozen base and serves vLLM's multi-LoRA:
each row decodes with its ``Sampling.adapter``'s ``LoRARequest``, rows of different adapters in one batch, and
``load_adapters`` serves an adapter's new PEFT folder under a fresh request id after each update (vLLM caches an
adapter by its id). Every row must name an adapter: vLLM's CPU build decodes a row without one, batched with
adapter rows, through the adapter in its last slot (docs/experiments/lora.md, "vLLM's multi-LoRA on the CPU
build").
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mara_bench.harness.providers.backends import choose_backend, missing_vllm, vllm_ready
from mara_bench.harness.providers.generation import Completion
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.adapter_config import VLLM_LORA_RANKS

ROLLOUT_BACKENDS = ("auto", "hf", "vllm")


@dataclass(frozen=True)
class EngineAdapters:
    """What vLLM's multi-LoRA is sized for: the adapters one batch holds (every role's) and their rank."""

    count: int
    rank: int

    def engine_kwargs(self) -> dict[str, Any]:
        """``vllm.LLM``'s LoRA arguments: ``max_lora_rank`` is the smallest rank vLLM takes that holds ``rank``."""
        rank = next((size for size in VLLM_LORA_RANKS if size >= self.rank), None)
        if rank is None:
            raise ValueError(f"vLLM serves LoRA ranks up to {VLLM_LORA_RANKS[-1]}, not {self.rank}")
        return {"enable_lora": True, "max_loras": self.count, "max_lora_rank": rank}


def rollout_backend(
    requested: str, model_dir: str | Path | None = None, expected_tokens: int | None = None, *, dtype: str
) -> str:
    """``hf`` or ``vllm`` for ``rollout.backend``, the policy's checkpoint, the tokens the run is expected to
    generate and the policy's dtype (the ``local/`` provider's rule,
    ``mara_bench.harness.providers.backends.choose_backend``)."""
    if requested not in ROLLOUT_BACKENDS:
        raise ValueError(f"rollout.backend must be one of {', '.join(ROLLOUT_BACKENDS)}, got {requested!r}")
    if requested == "vllm" and not vllm_ready():
        raise ValueError(missing_vllm("rollout.backend: vllm", "set rollout.backend: hf"))
    return choose_backend(requested, model_dir, expected_tokens, dtype=dtype)


def sampling_params_kwargs(sampling: Sampling, seed: int) -> dict[str, Any]:
    """``vllm.SamplingParams`` arguments for one row: one completion, the sampled token's logprob returned."""
    kwargs: dict[str, Any] = {
        "n": 1,
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "stop": list(sampling.stop),
        "seed": sampling.seed if sampling.seed is not None else seed,
        "logprobs": 0,
    }
    if sampling.top_k > 0:
        kwargs["top_k"] = sampling.top_k
    return kwargs


def completion_from_output(prompt_ids: list[int], output: Any) -> Completion:
    """A ``Completion`` from one vLLM ``CompletionOutput`` (text, token_ids, logprobs, finish_reason)."""
    if output.finish_reason not in ("stop", "length"):
        raise RuntimeError(f"vLLM ended a rollout with finish_reason={output.finish_reason!r}")
    response_ids = list(output.token_ids)
    logprobs = [
        position[token].logprob for token, position in zip(response_ids, output.logprobs, strict=True)
    ]
    return Completion(
        text=output.text,
        finish_reason=output.finish_reason,
        prompt_ids=list(prompt_ids),
        response_ids=response_ids,
        logprobs=logprobs,
    )


def _launcher_environment() -> None:
    """The torch.distributed variables vLLM's external launcher reads, for a run not started by torchrun."""
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(probe.getsockname()[1])
    for name, value in (
        ("RANK", "0"),
        ("LOCAL_RANK", "0"),
        ("WORLD_SIZE", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
    ):
        os.environ.setdefault(name, value)


class VLLMGenerator:
    """A ``mara_bench.trainer.learner.policy.Generator`` on a colocated vLLM engine loaded from ``model_path``."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        dtype: str,
        seed: int,
        gpu_memory_utilization: float,
        max_model_len: int | None = None,
        adapters: EngineAdapters | None = None,
    ):
        from vllm import LLM

        _launcher_environment()
        self.llm = LLM(
            model=str(model_path),
            dtype=dtype,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            logprobs_mode="raw_logprobs",
            distributed_executor_backend="external_launcher",
            enforce_eager=not torch.cuda.is_available(),  # the CPU build: no graph compilation
            **(adapters.engine_kwargs() if adapters is not None else {}),
        )
        self.threads = torch.get_num_threads()
        """Torch's CPU threads when the engine was built: its CPU attention checks every call runs with as many."""
        self.adapters = adapters
        """What the engine's multi-LoRA is sized for; ``None``: no adapters, full weights synced."""
        self.requests: dict[str, Any] = {}
        """Adapter name -> the ``LoRARequest`` its rows decode with now (``load_adapters``)."""
        self._request_ids = itertools.count(1)

    def _same_threads(self) -> None:
        """Run this call with the engine's thread count: OpenMP's count is per thread, and generation runs on the
        batcher's worker threads, which may have inherited another (``local/`` sets 1 on the CPU)."""
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)

    def __call__(self, prompts: list[list[int]], settings: list[Sampling]) -> list[Completion]:
        from vllm import SamplingParams

        seeds = torch.randint(0, 2**31 - 1, (len(prompts),)).tolist()
        params = [
            SamplingParams(**sampling_params_kwargs(s, seed)) for s, seed in zip(settings, seeds, strict=True)
        ]
        requests = [{"prompt_token_ids": list(p)} for p in prompts]
        lora = self.lora_requests([s.adapter for s in settings])
        self._same_threads()
        results = self.llm.generate(requests, params, use_tqdm=False, lora_request=lora)
        return [completion_from_output(p, r.outputs[0]) for p, r in zip(prompts, results, strict=True)]

    def lora_requests(self, names: list[str | None]) -> list[Any] | None:
        """Each row's ``LoRARequest`` (``None`` for an engine without adapters); a row naming an adapter the
        engine does not serve, or, under adapters, naming none, is an error."""
        if self.adapters is None:
            if any(name is not None for name in names):
                raise ValueError(
                    "a row names a LoRA adapter, and this vLLM engine was built without adapters"
                )
            return None
        unknown = sorted({str(name) for name in names if name not in self.requests})
        if unknown:
            raise ValueError(
                f"rows name adapters {unknown} the vLLM engine does not serve (it serves "
                f"{sorted(self.requests)}); under adapters every row needs one: vLLM's CPU build decodes a row "
                "without an adapter through the adapter in its last slot"
            )
        return [self.requests[name] for name in names]

    def load_adapters(self, folders: Mapping[str, Path]) -> None:
        """Serve each named adapter from its PEFT folder under a fresh request id (vLLM caches an adapter by its
        id, so a reused id would keep the old weights) and remove the request it replaces from the engine."""
        from vllm.lora.request import LoRARequest

        for name, folder in folders.items():
            replaced = self.requests.get(name)
            request_id = next(self._request_ids)
            self.requests[name] = LoRARequest(f"{name}-{request_id}", request_id, str(folder))
            if replaced is not None:
                self.llm.llm_engine.remove_lora(replaced.lora_int_id)

    def score(self, ids: list[int], adapter: str | None = None) -> list[float]:
        """The engine's logprob of each of ``ids[1:]`` given the ids before it (vLLM's prompt logprobs), through
        ``adapter`` when named."""
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        lora = self.lora_requests([adapter])
        self._same_threads()
        [result] = self.llm.generate(
            [{"prompt_token_ids": list(ids)}], params, use_tqdm=False, lora_request=lora
        )
        return [
            position[token].logprob
            for token, position in zip(ids[1:], result.prompt_logprobs[1:], strict=True)
        ]

    def sync(self, named_parameters: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Copy the policy's parameters (HF names, whole tensors) into the engine and drop its prefix cache.

        Through vLLM's in-place weight reload (``LLM.collective_rpc("reload_weights")``), the worker hook its RL
        integrations use: it restores layers whose weights were repacked for the device's kernels (the CPU
        build repacks linear layers after loading), loads the checkpoint-format tensors with the model's own
        ``load_weights`` (which fuses q/k/v and gate/up) and repacks them again. The engine lives in this process
        (the external launcher turns vLLM's engine process off), so the tensors are passed by reference."""
        weights = [(name, parameter.detach()) for name, parameter in named_parameters]
        self.llm.collective_rpc(
            "reload_weights", kwargs={"weights_iterator": iter(weights), "is_checkpoint_format": True}
        )
        self.llm.reset_prefix_cache()
