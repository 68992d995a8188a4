"""Scripted mock models for offline tests and benchmarks: Inspect's ``mockllm`` with usage always set.

``mockllm`` outputs without token usage make Inspect count tokens with tiktoken, which downloads an encoding;
every output built here carries a ``ModelUsage`` so evals run fully offline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput, ModelUsage, get_model

Responder = Callable[[list[ChatMessage], GenerateConfig], "str | ModelOutput"]
"""A function from the prompt messages (and generate config) to a reply text or a full ``ModelOutput``."""


def scripted_output(text: str, *, model: str = "mockllm/model", stop_reason: str = "stop") -> ModelOutput:
    """A ``ModelOutput`` for ``text`` with token usage set (a rough 4-characters-per-token count)."""
    output = ModelOutput.from_content(model=model, content=text, stop_reason=stop_reason)
    output.usage = ModelUsage(
        input_tokens=1, output_tokens=max(1, len(text) // 4), total_tokens=1 + max(1, len(text) // 4)
    )
    return output


def _as_output(reply: str | ModelOutput) -> ModelOutput:
    if isinstance(reply, ModelOutput):
        if reply.usage is None:
            reply.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return reply
    return scripted_output(reply)


def scripted_model(
    script: Responder | Iterable[str | ModelOutput], *, name: str = "mockllm/model", **kwargs: Any
) -> Model:
    """A mock model replying from ``script``: a responder function, or a fixed sequence of replies."""
    if callable(script):
        responder = script

        def custom_outputs(messages, tools, tool_choice, config):  # noqa: ARG001
            return _as_output(responder(messages, config))

        return get_model(name, custom_outputs=custom_outputs, memoize=False, **kwargs)
    return get_model(name, custom_outputs=[_as_output(r) for r in script], memoize=False, **kwargs)
