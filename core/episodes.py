"""The data shapes every agent system, the harness and the trainer share: one source of truth.

An agent system is plain async code over two interfaces:

* ``Chat`` -- ``await chat(role, messages, **sampling) -> Reply``. In the harness it is backed by Inspect
  models (one per model role); in the trainer by the policy being trained, which also fills token ids and
  logprobs.
* ``Toolbox`` -- named async tools returning text; a failing tool raises ``ToolError``.

A system never calls either directly: it goes through an ``EpisodeRecorder``, which records every model call
(role, messages, reply, parent call, turn) and every tool call into an ``Episode``. The trainer turns an
Episode's calls into training samples; the harness stores it with the Inspect sample.

Messages are plain dicts in the chat-template shape: ``{"role": "system"|"user"|"assistant"|"tool",
"content": str}``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

logger = logging.getLogger(__name__)
Message = dict[str, str]
"""One chat message: ``{"role": ..., "content": ...}``."""

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]


@dataclass
class Reply:
    """What one model call returned."""

    text: str
    """The full completion text, thinking included (``<think>…</think>`` is kept; systems strip it)."""
    finish_reason: FinishReason = "stop"
    """``length`` means the output was truncated at the token limit (the V-C loop aborts on it)."""
    input_tokens: int = 0
    """Prompt tokens the backend counted (0 when it did not report usage)."""
    output_tokens: int = 0
    """Completion tokens the backend counted."""
    model: str | None = None
    """The model that answered (an Inspect model name, or the policy's name in the trainer)."""
    prompt_ids: list[int] | None = None
    """Token ids of the rendered prompt, when the backend exposes them (the trainer's policy does)."""
    response_ids: list[int] | None = None
    """Token ids of the completion, when the backend exposes them."""
    logprobs: list[float] | None = None
    """Per-token logprobs of ``response_ids`` under the sampling policy, when available."""


class Chat(Protocol):
    """A model endpoint keyed by agent role (``solver``, ``verifier``, ``system1``, ``planner``, ...).

    An implementation may also carry a ``tokenizer`` attribute (a Hugging Face tokenizer of the model behind it;
    the trainer's policy chat does): systems then count tokens exactly, e.g. for MARS's System-1 budget bins.
    It may also have a ``watch(episode)`` method: ``EpisodeRecorder`` then hands it the episode it records into,
    once, when the episode starts (the trainer's pipelined rollouts read each agent's finished calls from it).
    """

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply: ...


class ToolError(Exception):
    """A tool failed in a way the agent should be told about (returned to it as a tool error, not a crash)."""


class TransientToolError(ToolError):
    """A tool failure that may not happen again (a timeout, a dropped connection, HTTP 429 or 5xx, a garbled
    answer): the agent is told, and the tool cache never records it as the tool's response."""


ToolFunction = Callable[..., Awaitable[str]]


class Toolbox:
    """The tools a system may call, by name. Each tool is an async function returning text."""

    def __init__(self, tools: dict[str, ToolFunction] | None = None, *, cache: object | None = None):
        self._tools: dict[str, ToolFunction] = dict(tools or {})
        self.cache = cache
        """The tool cache the tools sit behind (a ``mara_bench.harness.toolcache.ToolCache``, above this floor), or
        ``None`` when tools run live."""

    def names(self) -> list[str]:
        return sorted(self._tools)

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    async def call(self, name: str, **arguments: Any) -> str:
        """Run tool ``name``; unknown tools and tool failures raise ``ToolError``."""
        if name not in self._tools:
            raise ToolError(f"unknown tool {name!r}; available tools: {', '.join(self.names()) or 'none'}")
        try:
            return await self._tools[name](**arguments)
        except ToolError:
            raise
        except TypeError as err:
            raise ToolError(f"bad arguments for tool {name!r}: {err}") from err
        except Exception as err:  # noqa: BLE001 - a tool's own failure is the agent's tool error, never a crash
            logger.exception("tool %r failed in the harness", name)
            raise ToolError(f"tool {name!r} failed: {type(err).__name__}: {err}") from err


@dataclass
class ModelCall:
    """One model call inside an episode."""

    id: int
    """Index of this call in ``Episode.calls``."""
    role: str
    """The agent role that made the call (also the Inspect model role that served it)."""
    messages: list[Message]
    """The exact prompt messages sent."""
    reply: Reply
    """What the model returned."""
    parent: int | None = None
    """The call whose output this call consumes (a Verifier's parent is the Solver call it judges)."""
    turn: int = 0
    """The system's turn or iteration counter when the call was made."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The system's per-call outcome as plain data, written and read through its typed ``Outcome``
    (``mara_bench.harness.systems.outcomes``: ``SolverOutcome``, ``VerifierOutcome``, ``DistillOutcome``,
    ``WorkerOutcome``, ``PlanOutcome``, ``SearchOutcome``, ``UpdateOutcome``)."""


@dataclass
class ToolCall:
    """One tool call inside an episode."""

    id: int
    """Index of this tool call in ``Episode.tool_calls``."""
    name: str
    """The tool called (``search``, ``scholar``, ``browse``, ``python``, ``retrieve``...)."""
    arguments: dict[str, Any]
    """The keyword arguments it was called with."""
    output: str
    """The text the tool returned (empty when it failed)."""
    error: str | None = None
    """The tool error message when the tool failed (``output`` is then empty)."""
    call: int | None = None
    """The model call that requested this tool call."""
    turn: int = 0
    """The system's turn counter when the tool was called."""
    seconds: float = 0.0
    """Wall-clock seconds the tool took."""
    origin: str | None = None
    """The tool whose result this call follows up, when the system made it itself (MARS reads the page behind a
    ``search`` or ``scholar`` result with ``browse``); ``None`` for calls an agent asked for."""


@dataclass
class Episode:
    """Everything one run of a system on one question did."""

    system: str
    """The system's registered name (``vc``, ``mars``, ``matpo``, ``mask``...)."""
    question: str
    """The question the system was given."""
    calls: list[ModelCall] = field(default_factory=list)
    """Every model call, in the order they were made (``ModelCall.id`` is the index)."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Every tool call, in the order they were made."""
    intermediate_answers: list[dict[str, Any]] = field(default_factory=list)
    """Answers recorded along the way, each an ``IntermediateAnswer`` as plain data (M-ASK records one per turn)."""
    final_answer: str | None = None
    """The system's final answer text (already extracted from its answer format)."""
    answers: dict[str, str | None] = field(default_factory=dict)
    """Other named answers to score from the same run, e.g. ``{"solver": ...}`` for the V-C system."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The system's per-episode outcome as plain data, through its typed ``Outcome`` (``mara_bench.harness.systems.outcomes``:
    ``VCOutcome``, ``MatpoOutcome``, ``MaskOutcome``, ``ToolLoopOutcome``, the trainer's ``GroupedRolloutOutcome``...)."""

    def calls_by_role(self, role: str) -> list[ModelCall]:
        return [c for c in self.calls if c.role == role]

    def to_dict(self) -> dict[str, Any]:
        """The Episode as plain data, equal to ``dataclasses.asdict(self)`` and as independent of it, built without
        ``asdict``'s recursion into every token id and logprob (a rollout's Episodes hold thousands)."""
        return {
            "system": self.system,
            "question": self.question,
            "calls": [_call_dict(call) for call in self.calls],
            "tool_calls": [{**vars(tool), "arguments": deepcopy(tool.arguments)} for tool in self.tool_calls],
            "intermediate_answers": deepcopy(self.intermediate_answers),
            "final_answer": self.final_answer,
            "answers": dict(self.answers),
            "meta": deepcopy(self.meta),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        calls = [ModelCall(**{**c, "reply": Reply(**c["reply"])}) for c in data.get("calls", [])]
        tools = [ToolCall(**t) for t in data.get("tool_calls", [])]
        rest = {k: v for k, v in data.items() if k not in ("calls", "tool_calls")}
        return cls(**rest, calls=calls, tool_calls=tools)


def _call_dict(call: ModelCall) -> dict[str, Any]:
    reply = call.reply
    token_lists = {
        name: None if values is None else list(values)
        for name, values in (
            ("prompt_ids", reply.prompt_ids),
            ("response_ids", reply.response_ids),
            ("logprobs", reply.logprobs),
        )
    }
    return {
        **vars(call),
        "messages": deepcopy(call.messages),
        "reply": {**vars(reply), **token_lists},
        "meta": deepcopy(call.meta),
    }


class EpisodeRecorder:
    """Runs model and tool calls for a system and records them into ``self.episode``."""

    def __init__(self, system: str, question: str, chat: Chat, toolbox: Toolbox | None = None):
        self.episode = Episode(system=system, question=question)
        self._chat = chat
        self._toolbox = toolbox or Toolbox()
        watch = getattr(chat, "watch", None)
        if watch is not None:  # a chat that follows the episode live (the trainer's pipelined rollouts)
            watch(self.episode)

    @property
    def toolbox(self) -> Toolbox:
        return self._toolbox

    async def ask(
        self,
        role: str,
        messages: list[Message],
        *,
        parent: int | None = None,
        turn: int = 0,
        meta: dict[str, Any] | None = None,
        **sampling: Any,
    ) -> ModelCall:
        """Call the model serving ``role`` and record the call."""
        reply = await self._chat(role, messages, **sampling)
        call = ModelCall(
            id=len(self.episode.calls),
            role=role,
            messages=list(messages),
            reply=reply,
            parent=parent,
            turn=turn,
            meta=dict(meta or {}),
        )
        self.episode.calls.append(call)
        return call

    async def tool(
        self,
        name: str,
        *,
        call: int | None = None,
        turn: int = 0,
        origin: str | None = None,
        **arguments: Any,
    ) -> ToolCall:
        """Run a tool and record it; a ``ToolError`` is recorded and returned, never raised."""
        started = time.perf_counter()
        try:
            output, error = await self._toolbox.call(name, **arguments), None
        except ToolError as err:
            output, error = "", str(err)
        record = ToolCall(
            id=len(self.episode.tool_calls),
            name=name,
            arguments=dict(arguments),
            output=output,
            error=error,
            call=call,
            turn=turn,
            seconds=time.perf_counter() - started,
            origin=origin,
        )
        self.episode.tool_calls.append(record)
        return record
