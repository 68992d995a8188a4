"""Run an agent system inside Inspect: ``Chat`` over Inspect model roles, and the Episode stored with the sample.

The Episode goes into the sample's store once, as JSON text under ``EPISODE_KEY`` (``stored_episode`` reads it
back). Text rather than nested data because Inspect copies, diffs and logs every store write in each enclosing span
and in the solver's state change: a string is one value to copy and compare, and the log keeps it once (its events
refer to it as an attachment), where the nested form was copied, diffed and walked node by node four times per
sample (``benchmarks/bench_harness_overhead.py`` measures the per-sample cost).

Each agent role (``solver``, ``verifier``, ``system1`` ...) is served by ``get_model(role=...)``: the model bound
with ``--model-role <role>=<model>``, else the evaluated model. That is what lets a trained Verifier/Corrector be
paired with any solver. In a multi-agent system every call runs inside a transcript span named after its role, so
``inspect view`` shows who said what (a single-agent system skips the spans: they would say nothing and cost
time). The protocol's sampling settings (the task's generate config) apply to every role's model, not only to the
evaluated one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import TaskState
from inspect_ai.util import Store, span

from mara_bench.core.episodes import Episode, FinishReason, Message, Reply
from mara_bench.core.inspect_compat import active_generate_config
from mara_bench.judges.response import store_key

EPISODE_KEY = "episode"
"""Store key of the Episode as JSON text (``Episode.to_dict()``); read it with ``stored_episode``."""

_SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "max_tokens", "seed", "stop_seqs", "reasoning_effort")

_MESSAGE_TYPES: dict[str, type[ChatMessage]] = {
    "system": ChatMessageSystem,
    "user": ChatMessageUser,
    "assistant": ChatMessageAssistant,
    "tool": ChatMessageTool,
}

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "max_tokens": "length",
    "model_length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
}


def to_inspect_messages(messages: list[Message]) -> list[ChatMessage]:
    """Plain ``{"role", "content"}`` dicts to Inspect chat messages."""
    converted = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in _MESSAGE_TYPES:
            raise ValueError(f"message {index} has role {role!r}; expected one of {sorted(_MESSAGE_TYPES)}")
        converted.append(_MESSAGE_TYPES[role](content=message["content"]))
    return converted


def reply_from_output(output: ModelOutput) -> Reply:
    """An Inspect ``ModelOutput`` as a ``Reply`` (token ids and logprobs when the provider returned them)."""
    usage = output.usage
    metadata = output.metadata or {}
    logprobs = None
    if output.choices and output.choices[0].logprobs is not None:
        logprobs = [entry.logprob for entry in output.choices[0].logprobs.content]
    return Reply(
        text=output.completion,
        finish_reason=_FINISH_REASONS.get(output.stop_reason, "stop"),
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        model=output.model,
        prompt_ids=metadata.get("prompt_ids"),
        response_ids=metadata.get("response_ids"),
        logprobs=metadata.get("logprobs", logprobs),
    )


class InspectChat:
    """``Chat`` backed by Inspect models, one per agent role."""

    def __init__(self, roles: dict[str, Model] | None = None, *, spans: bool = True):
        self._models: dict[str, Model] = dict(roles or {})
        self._spans = spans
        self.sent: dict[str, list[dict[str, Any]]] = {}
        """Per role, each distinct set of generation settings its calls were sent with (in order)."""

    def model_for(self, role: str) -> Model:
        if role not in self._models:
            self._models[role] = get_model(role=role)
        return self._models[role]

    def tokenizer_for(self, role: str) -> Any:
        """The tokenizer of the model serving ``role`` when its provider exposes one (``local/`` does), else None."""
        return getattr(self.model_for(role).api, "tokenizer", None)

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        model = self.model_for(role)
        protocol = active_generate_config().model_dump(include=set(_SAMPLING_FIELDS), exclude_none=True)
        config = GenerateConfig(**{**protocol, **sampling})
        settings = config.model_dump(include=set(_SAMPLING_FIELDS), exclude_none=True)
        if settings not in self.sent.setdefault(role, []):
            self.sent[role].append(settings)
        async with span(name=role, type="agent") if self._spans else contextlib.nullcontext():
            output = await model.generate(to_inspect_messages(messages), config=config)
        return reply_from_output(output)


GENERATION_KEY = "generation_by_role"
"""Store key of the generation settings each role's calls were sent with (``InspectChat.sent``)."""


def record_generation(state: TaskState, chat: InspectChat) -> None:
    """Put on the sample the generation settings each role's calls were actually sent with."""
    state.store.set(GENERATION_KEY, chat.sent)


def stored_episode(store: Store | Mapping[str, Any]) -> Episode | None:
    """The Episode a sample's store holds (``TaskState.store`` or a logged ``EvalSample.store``), None without one."""
    stored = store.get(EPISODE_KEY)
    return None if stored is None else Episode.from_dict(json.loads(stored))


def store_episode(state: TaskState, episode: Episode) -> None:
    """Put the Episode and its other named answers on the sample, and make the final answer the sample's output.

    The final answer is not stored a second time under ``answer.final``: it is in the Episode, and the sample's
    output is where the judges read it (``mara_bench.judges.response.response_to_judge``)."""
    state.store.set(EPISODE_KEY, json.dumps(episode.to_dict(), ensure_ascii=False))
    for name, answer in episode.answers.items():
        state.store.set(store_key(name), answer)
    last_reply = episode.calls[-1].reply if episode.calls else None
    state.output = ModelOutput.from_content(
        model=(last_reply.model if last_reply and last_reply.model else "system"),
        content=episode.final_answer or "",
    )
    # the output's own message, as Inspect's generate() appends it
    state.messages.append(state.output.message)
