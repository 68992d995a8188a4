"""The reason → tool call → observe loop shared by MARS System 2 and the react baseline.

The agent writes ``<think>``, then either ``<tool_call>{"name", "arguments", "purpose"}</tool_call>`` blocks or an
``<answer>``. Tool calls run concurrently; an ``observe`` function turns their results into the text handed back in
``<tool_response>`` (MARS distils it with System 1, react hands it back raw). A reply with neither a tool call nor
an answer stays in the context and the agent continues (MARS algorithm 1, line 14). The loop stops at the first
answer or after ``max_turns`` model calls.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mara_bench.core.episodes import EpisodeRecorder, Message, ModelCall, ToolCall
from mara_bench.harness.prompts import fill, load_prompt
from mara_bench.harness.systems.outcomes import ToolLoopOutcome
from mara_bench.harness.systems.parsing import last_tag, tag_blocks

TOOL_DESCRIPTIONS = {
    "search": 'web search; arguments {"query": "..."} or several queries at once {"query": ["...", "..."]}',
    "scholar": 'academic paper search; arguments {"query": "..."} or {"query": ["...", "..."]}',
    "browse": 'fetch a web page and return its main text; arguments {"url": "..."}',
    "python": 'run Python code and return what it prints; arguments {"code": "..."}',
    "retrieve": 'search the local document corpus; arguments {"query": "..."} or {"query": ["...", "..."]}',
}


@dataclass
class ToolRequest:
    """One ``<tool_call>`` block: what the agent asked for, or why it could not be understood."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    purpose: str = ""
    error: str | None = None
    results: list[ToolCall] = field(default_factory=list)
    """The tool call run for this request (empty when the request was malformed)."""


Observe = Callable[[ModelCall, list[ToolRequest]], Awaitable[str]]
"""``observe(agent_call, executed_requests) -> text handed back to the agent``."""


def parse_tool_calls(text: str) -> list[ToolRequest]:
    """Every ``<tool_call>`` block as a request; malformed JSON becomes a request carrying an error message."""
    requests = []
    for block in tag_blocks(text, "tool_call"):
        try:
            payload = json.loads(block)
        except json.JSONDecodeError as err:
            requests.append(ToolRequest(name="?", error=f"the tool call is not valid JSON ({err.msg})"))
            continue
        if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
            requests.append(ToolRequest(name="?", error='a tool call must be a JSON object with a "name"'))
            continue
        arguments = payload.get("arguments", {})
        if not isinstance(arguments, dict):
            requests.append(ToolRequest(name=payload["name"], error='"arguments" must be a JSON object'))
            continue
        requests.append(
            ToolRequest(name=payload["name"], arguments=arguments, purpose=str(payload.get("purpose", "")))
        )
    return requests


def tool_description(names: list[str]) -> str:
    """The ``{tool description}`` section of an agent prompt, listing the tools ``names``."""
    lines = [f"- {name}: {TOOL_DESCRIPTIONS.get(name, 'a tool')}" for name in names]
    return fill(load_prompt("mars/tool_description"), {"tool list": "\n".join(lines)})


async def execute(recorder: EpisodeRecorder, call: ModelCall, requests: list[ToolRequest]) -> None:
    """Run every well-formed request concurrently, filling ``request.results``."""

    async def run(request: ToolRequest) -> None:
        request.results = [
            await recorder.tool(request.name, call=call.id, turn=call.turn, **request.arguments)
        ]

    await asyncio.gather(*(run(request) for request in requests if request.error is None))


def raw_result(request: ToolRequest) -> str:
    """A request's results as the agent sees them without distillation (errors stated as tool errors)."""
    if request.error is not None:
        return f"Tool error: {request.error}"
    parts = [
        f"Tool error ({r.name}): {r.error}" if r.error is not None else r.output for r in request.results
    ]
    return "\n\n".join(parts)


def _refuse_unoffered(requests: list[ToolRequest], offered: list[str]) -> None:
    for request in requests:
        if request.error is None and request.name not in offered:
            request.error = f"unknown tool {request.name!r}; available tools: {', '.join(offered) or 'none'}"


async def tool_loop(
    recorder: EpisodeRecorder,
    *,
    role: str,
    system_prompt: str,
    max_turns: int,
    observe: Observe,
    sampling: dict[str, Any] | None = None,
    offered: list[str] | None = None,
) -> None:
    """Run the loop for ``role``; sets ``episode.final_answer`` from the first ``<answer>``.

    ``offered`` names the tools the agent may call (default: every tool in the toolbox); a call to another tool
    is answered with a tool error.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    episode = recorder.episode
    messages: list[Message] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": episode.question},
    ]
    parent: int | None = None
    for turn in range(max_turns):
        call = await recorder.ask(role, messages, parent=parent, turn=turn, **(sampling or {}))
        messages = [*messages, {"role": "assistant", "content": call.reply.text}]
        parent = call.id
        requests = parse_tool_calls(call.reply.text)
        if offered is not None:
            _refuse_unoffered(requests, offered)
        if requests:
            await execute(recorder, call, requests)
            observation = await observe(call, requests)
            response = fill(load_prompt("mars/tool_response"), {"results": observation})
            messages = [*messages, {"role": "user", "content": response}]
            continue
        answer = last_tag(call.reply.text, "answer")
        if answer is not None:
            episode.final_answer = answer
            ToolLoopOutcome("answer").record(episode.meta)
            return
    ToolLoopOutcome("turn_limit").record(episode.meta)
