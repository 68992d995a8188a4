"""``local/`` on ``transformers`` (``-M backend=hf``): the checkpoint loaded in-process, concurrent Inspect calls
batched (``-M scheduler``: ``continuous`` through ``mara_bench.harness.providers.scheduler``, else ``static`` through
``mara_bench.harness.providers.batching``) and generated with per-request sampling settings (``mara_bench.harness.providers.generation``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

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

from mara_bench.core.inspect_compat import (
    DEFAULT_MAX_TOKENS,
    JSON_SCHEMA_EXTENDED_FIELDS,
    HFHandler,
    emulate_reasoning_history,
    json_schema_dump,
)
from mara_bench.harness.chat_template import render_prompt, template_renders_tools
from mara_bench.harness.providers.batching import RequestBatcher
from mara_bench.harness.providers.generation import Completion, DecodeBatch, context_length, generate
from mara_bench.harness.providers.kv_slots import unmergeable_cache_reason
from mara_bench.harness.providers.loading import LoadedModel, default_device, load_checkpoint
from mara_bench.harness.providers.local_options import LocalOptions
from mara_bench.harness.providers.resolve import ResolvedCheckpoint
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.providers.scheduler import ContinuousBatcher, GenerationRequest

logger = logging.getLogger(__name__)

TOOL_FORMAT = "any"
"""Model family given to Inspect's open-model tool-call parser: not a known family, so it tries every format."""


CPU_THREADS = 1
"""Torch threads on the CPU unless ``-M threads`` says otherwise: one never oversubscribes a shared machine."""


_loaded: dict[tuple, tuple[LoadedModel, RequestBatcher | ContinuousBatcher]] = {}
"""Models already loaded in this process (several roles naming one checkpoint share weights and batches)."""


class TransformersModelAPI(ModelAPI):
    """``local/`` on ``transformers``: batched in-process generation with token ids and logprobs."""

    def __init__(
        self, model_name: str, checkpoint: ResolvedCheckpoint, options: LocalOptions, config: GenerateConfig
    ):
        super().__init__(model_name=model_name, config=config)
        self.options = options
        self.checkpoint = checkpoint
        self.device = options.device or default_device()
        if self.device == "cpu":
            torch.set_num_threads(options.threads or CPU_THREADS)
        self.template_args = (
            {} if options.enable_thinking is None else {"enable_thinking": options.enable_thinking}
        )

    @functools.cached_property
    def _engine(self) -> tuple[LoadedModel, RequestBatcher | ContinuousBatcher]:
        """The loaded model and its batcher, made on first use: Inspect creates models before it builds (and
        checks) the tasks, so weights load only once a command has passed every check and needs the model."""
        options, checkpoint, device = self.options, self.checkpoint, self.device
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
            _loaded[key] = (loaded, _scheduler(self.model_name, loaded, context, options))
        if options.seed is not None:  # after loading, so that loading cannot shift the draws
            torch.manual_seed(options.seed)
        return _loaded[key]

    @property
    def loaded(self) -> LoadedModel:
        """The model and tokenizer (loaded on first use)."""
        return self._engine[0]

    @property
    def batcher(self) -> RequestBatcher | ContinuousBatcher:
        return self._engine[1]

    @functools.cached_property
    def context(self) -> int:
        """The context window: ``-M max_model_len``, else the model's own."""
        return self.options.max_model_len or context_length(self.loaded.model)

    @functools.cached_property
    def renders_tools(self) -> bool:
        return template_renders_tools(self.loaded.tokenizer, **self.template_args)

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
