"""The model API behind ``--model local/<x>``: resolve the checkpoint, pick a backend, serve Inspect's calls.

Backends (``-M backend=auto|hf|vllm``): ``vllm`` hands the resolved checkpoint to Inspect's own vLLM provider
(a vLLM server, on a GPU or through vLLM's CPU build; LoRA adapters are applied by vLLM); ``hf`` runs
``transformers`` in-process and gathers concurrent requests into batches (``mara_bench.harness.providers.batching``)
generated with per-request sampling settings (``mara_bench.harness.providers.generation``). ``auto`` takes vLLM when it is
installed and the job is cheaper there, its start-up included (by measured costs given ``-M expected_tokens``,
else by the checkpoint's size: ``mara_bench.harness.providers.backends``). The backends are
``mara_bench.harness.providers.transformers_api`` and ``mara_bench.harness.providers.vllm_api``; the options are
``mara_bench.harness.providers.local_options.LocalOptions``.

The transformers backend schedules requests (``-M scheduler``) either ``continuous`` (the default;
``mara_bench.harness.providers.scheduler``): a running batch of up to ``batch_size`` rows that admits waiting requests and
retires finished rows between decode steps, each request answered as soon as its own row ends; or ``static``
(``mara_bench.harness.providers.batching``): batches gathered for ``batch_wait_ms`` and run to their longest row, one at a
time. A model whose KV cache cannot be merged across requests (sliding-window, hybrid or linear-attention
layers) is batched statically, with a warning naming the reason. Both give every request the same tokens.

``-M`` options (all optional): ``backend``, ``expected_tokens`` (the job's samples x epochs x max tokens, for
``auto``), ``dtype`` (auto|float32|float16|bfloat16), ``device`` (``cpu``,
``cuda:N``; for vLLM ``cuda:N``, a GPU list ``0,1``, or ``cpu`` for its CPU build), ``max_model_len``, ``tensor_parallel_size`` (vLLM),
``seed`` (torch's global seed; vLLM's ``--seed``), ``threads`` (torch's CPU threads, process-wide, when the
transformers backend runs on the CPU; default 1: torch's own default of one per core slowed decoding several-fold
on a shared machine), ``batch_size`` (default: ``--max-connections`` when it is set, else 16, so the batch takes
every request Inspect lets run at once), ``batch_wait_ms``, ``scheduler``, ``merge`` (merge a LoRA
adapter into its base; default true), ``base`` (an adapter's base model), ``tokenizer`` (a tokenizer
directory), ``chat_template`` (a Jinja file), ``enable_thinking`` (passed to the chat template),
``allow_download`` (fetch an HF id missing from the cache), ``return_token_ids`` (put ``prompt_ids``,
``response_ids`` and ``logprobs`` in every output's metadata: the ``Reply`` field names, which
``mara_bench.harness.systems`` reads; transformers backend only).

Creating the model checks the options, resolves the name and reads what can be read without loading
(``mara_bench.harness.providers.loading.check_before_loading``); the weights load on the first call that needs them, since
Inspect creates models before it builds and checks the tasks (a mistyped ``-T`` then costs no load).

Every ``local/`` model carries the ``CheckpointRecord`` of what its name resolved to (``mara_bench.harness.providers.provenance``:
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
from dataclasses import replace
from typing import Any

from inspect_ai.model import GenerateConfig, ModelAPI

from mara_bench.harness.prerequisites import one_line_errors
from mara_bench.harness.providers.backends import choose_backend
from mara_bench.harness.providers.loading import check_before_loading, default_device, explicit_dtype
from mara_bench.harness.providers.local_options import BATCH_SIZE, LocalOptions
from mara_bench.harness.providers.provenance import RECORD_ATTRIBUTE, checkpoint_record
from mara_bench.harness.providers.resolve import resolve_checkpoint
from mara_bench.harness.providers.transformers_api import TransformersModelAPI
from mara_bench.harness.providers.vllm_api import vllm_model


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
    check_before_loading(checkpoint)
    dtype = explicit_dtype(options.dtype, options.device or default_device(), checkpoint.model)
    if choose_backend(options.backend, checkpoint.model, options.expected_tokens, dtype=dtype) == "vllm":
        api = vllm_model(model_name, checkpoint, options, config)
    else:
        if (options.tensor_parallel_size or 1) > 1:
            raise ValueError("local/: -M tensor_parallel_size > 1 needs the vLLM backend (-M backend=vllm)")
        api = TransformersModelAPI(model_name, checkpoint, options, config)
    # hashed when a task records it (after its checks), not here: hashing reads every weight file
    setattr(
        api, RECORD_ATTRIBUTE, functools.cache(functools.partial(checkpoint_record, model_name, checkpoint))
    )
    return api
