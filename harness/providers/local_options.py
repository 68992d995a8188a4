"""The ``-M`` options of ``local/`` models (``mara_bench.harness.providers.local_api`` documents each), checked when the model
is created."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator

from mara_bench.core.typed_config import config_dataclass, validate

BATCH_SIZE = 16
"""Rows generated together unless ``-M batch_size`` or ``--max-connections`` says otherwise."""


@config_dataclass(frozen=True)
class LocalOptions:
    """The ``-M`` options of ``local/`` (see ``mara_bench.harness.providers.local_api``), checked when the model is created."""

    backend: Literal["auto", "hf", "vllm"] = "auto"
    """Generation engine: ``auto`` (``mara_bench.harness.providers.backends.choose_backend``: vLLM when installed, for
    checkpoints of 100 MiB and more whose job pays for its start-up), ``hf`` or ``vllm``."""
    expected_tokens: Annotated[StrictInt, Field(ge=1)] | None = None
    """Tokens the job will generate (samples x epochs x max tokens), from which ``auto`` weighs vLLM's start-up
    against its faster decoding; without it ``auto`` goes by checkpoint size alone."""
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
