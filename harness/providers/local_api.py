"""The model API behind ``--model local/<x>``: resolve the checkpoint, pick a backend, serve Inspect's calls.

Backends (``-M backend=auto|hf|vllm``): ``vllm`` hands the resolved checkpoint to Inspect's own vLLM provider
(a vLLM server, on a GPU or through vLLM's CPU build; LoRA adapters are applied by vLLM); ``hf`` runs
``transformers`` in-process and gathers concurrent requests into batches (``harness.providers.batching``)
generated with per-request sampling settings (``harness.providers.generation``). ``auto`` takes vLLM when it is
installed and the checkpoint is not tiny (``harness.providers.backends``).

The transformers backend schedules requests (``-M scheduler``) either ``continuous`` (the default;
``harness.providers.scheduler``): a running batch of up to ``batch_size`` rows that admits waiting requests and
retires finished rows between decode steps, each request answered as soon as its own row ends; or ``static``
(``harness.providers.batching``): batches gathered for ``batch_wait_ms`` and run to their longest row, one at a
time. A model whose KV cache cannot be merged across requests (sliding-window, hybrid or linear-attention
layers) is batched statically, with a warning naming the reason. Both give every request the same tokens.

``-M`` options (all optional): ``backend``, ``dtype`` (auto|float32|float16|bfloat16), ``device`` (``cpu``,
``cuda:N``; for vLLM ``cuda:N``, a GPU list ``0,1``, or ``cpu`` for its CPU build), ``max_model_len``, ``tensor_parallel_size`` (vLLM),
``seed`` (torch's global seed; vLLM's ``--seed``), ``threads`` (torch's CPU threads, process-wide, when the
transformers backend runs on the CPU; default 1: torch's own default of one per core slowed decoding several-fold
on a shared machine), ``batch_size`` (default: ``--max-connections`` when it is set, else 16, so the batch takes
every request Inspect lets run at once), ``batch_wait_ms``, ``scheduler``, ``merge`` (merge a LoRA
adapter into its base; default true), ``base`` (an adapter's base model), ``tokenizer`` (a tokenizer
directory), ``chat_template`` (a Jinja file), ``enable_thinking`` (passed to the chat template),
``allow_download`` (fetch an HF id missing from the cache), ``return_token_ids`` (put ``prompt_ids``,
``response_ids`` and ``logprobs`` in every output's metadata: the ``Reply`` field names, which
``harness.systems`` reads; transformers backend only).

Every ``local/`` model carries the ``CheckpointRecord`` of what its name resolved to (``harness.providers.provenance``:
path, run step, adapter, base, weights sha256), which the task's metadata records as ``resolved_checkpoint``.

Replies keep ``<think>`` blocks in their text (systems strip them where they need to). Tools are rendered by the
model's chat template; a template that ignores tools is an error rather than a prompt without them. Per-call
settings honoured: ``max_tokens``, ``temperature``, ``top_p``, ``top_k``, ``stop_seqs``, ``seed``,
``logprobs``/``top_logprobs``; unset ones default to the model's generation config. Stop reasons: ``stop``,
``max_tokens``, ``tool_calls``, and ``model_length`` when the context window ended the reply or the prompt does
not fit it (the output then carries the error in its metadata).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    Logprob,
    Logprobs,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    TopLogprob,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator

from harness.chat_template import render_prompt, template_renders_tools
from harness.prerequisites import one_line_errors
from harness.providers.backends import choose_backend
from harness.providers.batching import RequestBatcher
from harness.providers.generation import (
    Completion,
    DecodeBatch,
    Sampling,
    context_length,
    generate,
    unmergeable_cache_reason,
)
from harness.providers.loading import LoadedModel, default_device, load_checkpoint
from harness.providers.provenance import RECORD_ATTRIBUTE, checkpoint_record
from harness.providers.resolve import ResolvedCheckpoint, resolve_checkpoint
from harness.providers.scheduler import ContinuousBatcher, GenerationRequest
from harness.typed_config import config_dataclass, validate
from judges.inspect_compat import (
    DEFAULT_MAX_TOKENS,
    JSON_SCHEMA_EXTENDED_FIELDS,
    VLLMAPI,
    HFHandler,
    emulate_reasoning_history,
    json_schema_dump,
)

logger = logging.getLogger(__name__)

TOOL_FORMAT = "any"
"""Model family given to Inspect's open-model tool-call parser: not a known family, so it tries every format."""


CPU_THREADS = 1
"""Torch threads on the CPU unless ``-M threads`` says otherwise: one never oversubscribes a shared machine."""
BATCH_SIZE = 16
"""Rows generated together unless ``-M batch_size`` or ``--max-connections`` says otherwise."""


@config_dataclass(frozen=True)
class LocalOptions:
    """The ``-M`` options of ``local/`` (see the module docstring), checked when the model is created."""

    backend: Literal["auto", "hf", "vllm"] = "auto"
    """Generation engine: ``auto`` (vLLM when installed, for checkpoints of 100 MiB and more), ``hf`` or
    ``vllm``."""
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    """Weights' dtype (``auto``: the checkpoint's own)."""
    device: str | None = None
    """``cpu`` or ``cuda:N``; for vLLM ``cuda:N`` or a GPU list ``0,1`` (default: a GPU when there is one)."""
    max_model_len: Annotated[StrictInt, Field(ge=1)] | None = None
    """Context window in tokens (default: the model's own)."""
    tensor_parallel_size: Annotated[StrictInt, Field(ge=1)] | None = None
    """GPUs one vLLM engine spans."""
    seed: Annotated[StrictInt, Field(ge=0)] | None = None
    """Torch's global seed (vLLM's ``--seed``)."""
    threads: Annotated[StrictInt, Field(ge=1)] | None = None
    """Torch CPU threads for the transformers backend on the CPU (process-wide; default ``CPU_THREADS``)."""
    batch_size: Annotated[StrictInt, Field(ge=1)] | None = None
    """Most rows generated together (default: ``--max-connections`` when it is set, else ``BATCH_SIZE``)."""
    batch_wait_ms: Annotated[StrictFloat, Field(ge=0)] = 10.0
    """How long the static scheduler gathers requests into a batch."""
    scheduler: Literal["continuous", "static"] = "continuous"
    """``continuous`` (rows join and leave a running batch) or ``static`` (batches run to their longest row)."""
    merge: StrictBool = True
    """Merge a LoRA adapter into its base model."""
    base: str | None = None
    """An adapter's base model."""
    tokenizer: str | None = None
    """A tokenizer directory."""
    chat_template: str | None = None
    """A Jinja chat-template file."""
    enable_thinking: StrictBool | None = None
    """Passed to the chat template."""
    allow_download: StrictBool = False
    """Fetch a Hugging Face id missing from the local cache."""
    return_token_ids: StrictBool = False
    """Put ``prompt_ids``, ``response_ids`` and ``logprobs`` in every output's metadata (transformers only)."""

    @field_validator("device", mode="before")
    @classmethod
    def _device_text(cls, device: Any) -> Any:
        """``-M device=0,1`` arrives as a list and ``-M device=1`` as a number: both mean GPUs."""
        if isinstance(device, list | tuple):
            return ",".join(str(part) for part in device)
        return str(device) if isinstance(device, int) and not isinstance(device, bool) else device

    @classmethod
    def parse(cls, model_args: dict[str, Any]) -> LocalOptions:
        """The options given as ``-M`` arguments; a problem raises ``ConfigError`` naming the option."""
        return validate(cls, model_args, "local/ -M options")


@one_line_errors
def open_local_model(
    model_name: str,
    base_url: str | None = None,
    api_key: str | None = None,
    config: GenerateConfig = GenerateConfig(),
    **model_args: Any,
) -> ModelAPI:
    """Create the ``ModelAPI`` for ``local/<model_name>`` (called by Inspect with the ``-M`` options)."""
    options = LocalOptions.parse(model_args)
    if options.batch_size is None:
        options = replace(options, batch_size=config.max_connections or BATCH_SIZE)
    checkpoint = resolve_checkpoint(
        model_name,
        base=options.base,
        tokenizer=options.tokenizer,
        chat_template=options.chat_template,
        allow_download=options.allow_download,
    )
    record = checkpoint_record(model_name, checkpoint)
    if choose_backend(options.backend, checkpoint.model) == "vllm":
        api = _vllm_model(model_name, checkpoint, options, config)
    else:
        if (options.tensor_parallel_size or 1) > 1:
            raise ValueError("local/: -M tensor_parallel_size > 1 needs the vLLM backend (-M backend=vllm)")
        api = TransformersModelAPI(model_name, checkpoint, options, config)
        if options.seed is not None:  # after loading, so that loading cannot shift the draws
            torch.manual_seed(options.seed)
    setattr(api, RECORD_ATTRIBUTE, record)
    return api


def _vllm_model(
    model_name: str, checkpoint: ResolvedCheckpoint, options: LocalOptions, config: GenerateConfig
) -> ModelAPI:
    if options.return_token_ids:
        raise ValueError(
            "local/: -M return_token_ids=true needs -M backend=hf (the vLLM server returns text)"
        )
    served = f"{checkpoint.model}:{checkpoint.adapter}" if checkpoint.adapter else checkpoint.model
    _vllm_command_on_path()
    return LocalVLLMAPI(
        model_name, served, checkpoint.tokenizer, config=config, **vllm_server_args(checkpoint, options)
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
        "dtype": None if options.dtype == "auto" else options.dtype,
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


_loaded: dict[tuple, tuple[LoadedModel, RequestBatcher | ContinuousBatcher]] = {}
"""Models already loaded in this process (several roles naming one checkpoint share weights and batches)."""


class TransformersModelAPI(ModelAPI):
    """``local/`` on ``transformers``: batched in-process generation with token ids and logprobs."""

    def __init__(
        self, model_name: str, checkpoint: ResolvedCheckpoint, options: LocalOptions, config: GenerateConfig
    ):
        super().__init__(model_name=model_name, config=config)
        self.options = options
        device = options.device or default_device()
        if device == "cpu":
            torch.set_num_threads(options.threads or CPU_THREADS)
        merge = checkpoint.merge if checkpoint.merge is not None else options.merge
        key = (
            checkpoint,
            options.dtype,
            device,
            merge,
            options.max_model_len,
            options.batch_size,
            options.batch_wait_ms,
            options.scheduler,
        )
        if key not in _loaded:
            loaded = load_checkpoint(checkpoint, dtype=options.dtype, device=device, merge=merge)
            context = options.max_model_len or context_length(loaded.model)
            _loaded[key] = (loaded, _scheduler(model_name, loaded, context, options))
        self.loaded, self.batcher = _loaded[key]
        self.context = options.max_model_len or context_length(self.loaded.model)
        self.template_args = (
            {} if options.enable_thinking is None else {"enable_thinking": options.enable_thinking}
        )
        self.renders_tools = template_renders_tools(self.loaded.tokenizer, **self.template_args)

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer (systems count budget tokens with it)."""
        return self.loaded.tokenizer

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    def max_connections(self) -> int:
        return 2 * self.options.batch_size

    def collapse_user_messages(self) -> bool:
        return True

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        prompt = self.render(input, tools)
        if len(prompt) >= self.context:
            return self._overflow_output(
                f"the prompt has {len(prompt)} tokens but the context window (max_model_len) is {self.context}"
            )
        top = (config.top_logprobs or 1) if config.logprobs else 0
        completion = await self.batcher.submit((prompt, self.sampling(config), top))
        return self.to_output(completion, tools, with_logprobs=bool(config.logprobs))

    def render(self, messages: list[ChatMessage], tools: list[ToolInfo]) -> list[int]:
        """Token ids of the chat-templated prompt (tools rendered by the template)."""
        if tools and not self.renders_tools:
            checkpoint = self.loaded.checkpoint
            template = checkpoint.chat_template or f"of {checkpoint.tokenizer}"
            raise ValueError(
                f"local/{self.model_name}: the chat template {template} does not render tools, so the model "
                "would never see them; pass a tool-aware template with "
                "-M chat_template=FILE (or chat_template: in checkpoints.yaml), or use a system without tools"
            )
        return render_prompt(
            self.loaded.tokenizer,
            [_template_message(m) for m in emulate_reasoning_history(messages)],
            tools=[_template_tool(t) for t in tools],
            **self.template_args,
        )

    def sampling(self, config: GenerateConfig) -> Sampling:
        """Per-call settings, unset ones taken from the model's generation config."""
        defaults = self.loaded.model.generation_config
        sampled = bool(getattr(defaults, "do_sample", False))
        return Sampling(
            max_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=_first(
                config.temperature, getattr(defaults, "temperature", None) if sampled else 0.0, 1.0
            ),
            top_p=_first(config.top_p, getattr(defaults, "top_p", None) if sampled else None, 1.0),
            top_k=_first(config.top_k, getattr(defaults, "top_k", None) if sampled else None, 0),
            stop=tuple(config.stop_seqs or ()),
            seed=config.seed,
        )

    def to_output(self, completion: Completion, tools: list[ToolInfo], *, with_logprobs: bool) -> ModelOutput:
        if tools:  # tool calls in any common open-model format: <tool_call>{...}</tool_call>, ```json, raw
            message = HFHandler(self.model_name, TOOL_FORMAT).parse_assistant_response(completion.text, tools)
            message.model = self.model_name
        else:
            message = ChatMessageAssistant(content=completion.text, model=self.model_name, source="generate")
        at_context_end = len(completion.prompt_ids) + len(completion.response_ids) >= self.context
        if completion.finish_reason == "length":
            stop_reason = "model_length" if at_context_end else "max_tokens"
        else:
            stop_reason = "tool_calls" if message.tool_calls else "stop"
        choice = ChatCompletionChoice(
            message=message,
            stop_reason=stop_reason,
            logprobs=Logprobs(content=self._logprobs(completion)) if with_logprobs else None,
        )
        metadata = None
        if self.options.return_token_ids:
            metadata = {
                "prompt_ids": completion.prompt_ids,
                "response_ids": completion.response_ids,
                "logprobs": completion.logprobs,
            }
        prompt_tokens, response_tokens = len(completion.prompt_ids), len(completion.response_ids)
        usage = ModelUsage(
            input_tokens=prompt_tokens,
            output_tokens=response_tokens,
            total_tokens=prompt_tokens + response_tokens,
        )
        return ModelOutput(model=self.model_name, choices=[choice], usage=usage, metadata=metadata)

    def _logprobs(self, completion: Completion) -> list[Logprob]:
        decode = self.loaded.tokenizer.decode
        tops = completion.top_logprobs or [[] for _ in completion.response_ids]
        entries = []
        for token_id, logprob, top in zip(completion.response_ids, completion.logprobs, tops, strict=True):
            text = decode([token_id])
            alternatives = [
                TopLogprob(token=decode([i]), logprob=lp, bytes=list(decode([i]).encode())) for i, lp in top
            ]
            entries.append(
                Logprob(token=text, logprob=logprob, bytes=list(text.encode()), top_logprobs=alternatives)
            )
        return entries

    def _overflow_output(self, error: str) -> ModelOutput:
        logger.warning("local/%s: %s", self.model_name, error)
        output = ModelOutput.from_content(model=self.model_name, content="", stop_reason="model_length")
        output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        output.metadata = {"error": error}
        return output


def _scheduler(
    model_name: str, loaded: LoadedModel, context: int, options: LocalOptions
) -> RequestBatcher | ContinuousBatcher:
    """The ``-M scheduler`` for a loaded model; continuous falls back to static when caches cannot be merged."""
    sizes = {"batch_size": options.batch_size, "wait_ms": options.batch_wait_ms}
    if options.scheduler == "continuous":
        reason = unmergeable_cache_reason(loaded.model)
        if reason is None:
            return ContinuousBatcher(
                DecodeBatch(loaded.model, loaded.tokenizer, max_model_len=context), **sizes
            )
        logger.warning("local/%s: continuous batching is off (%s); batching statically", model_name, reason)

    def run_batch(requests: list[GenerationRequest]) -> list[Completion]:
        prompts, settings, tops = zip(*requests, strict=True)
        return generate(
            loaded.model, loaded.tokenizer, prompts, settings, max_model_len=context, top_logprobs=tops
        )

    return RequestBatcher(run_batch, **sizes)


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)


def _template_message(message: ChatMessage) -> dict[str, Any]:
    """An Inspect message as a chat-template dict, tool calls in the Hugging Face ``{"function": ...}`` shape."""
    data: dict[str, Any] = {"role": message.role, "content": message.text}
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function, "arguments": c.arguments}}
            for c in tool_calls
        ]
    if message.role == "tool":
        data["tool_call_id"] = getattr(message, "tool_call_id", None)
        data["name"] = getattr(message, "function", None)
    return data


def _template_tool(tool: ToolInfo) -> dict[str, Any]:
    return {"type": "function", "function": json_schema_dump(tool, exclude=JSON_SCHEMA_EXTENDED_FIELDS)}
