"""Offline doubles for the systems' tests: a scripted ``Chat`` per role, a ``Toolbox`` of fake async tools, the
real judges scoring an Episode the way an eval does, and a page server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
from inspect_ai.model import ModelName
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from mara_bench.core.episodes import Episode, Message, Reply, Toolbox, ToolError
from mara_bench.harness.systems.inspect_adapter import store_episode
from mara_bench.judges.scorers import lexical_scorer, math_scorer

Script = list["str | Reply"] | Callable[[list[Message]], "str | Reply"]


class ScriptedChat:
    """Replies per role from a queue (or a function of the messages); records every call and peak concurrency."""

    def __init__(self, scripts: dict[str, Script], *, delay: float = 0.0, tokenizer: Any = None):
        self.scripts = {role: (list(s) if isinstance(s, list) else s) for role, s in scripts.items()}
        self.delay = delay
        self.tokenizer = tokenizer
        self.calls: list[tuple[str, list[Message], dict[str, Any]]] = []
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        self.calls.append((role, messages, sampling))
        self.in_flight[role] = self.in_flight.get(role, 0) + 1
        self.peak[role] = max(self.peak.get(role, 0), self.in_flight[role])
        try:
            await asyncio.sleep(self.delay)
            script = self.scripts[role]
            if callable(script):
                reply = script(messages)
            elif not script:
                raise AssertionError(f"role {role!r} was called more often than scripted")
            else:
                reply = script.pop(0)
        finally:
            self.in_flight[role] -= 1
        return reply if isinstance(reply, Reply) else Reply(text=reply, model=f"fake/{role}")


def fake_toolbox(outputs: dict[str, Callable[..., str]]) -> tuple[Toolbox, list[tuple[str, dict[str, Any]]]]:
    """A Toolbox whose tools return ``outputs[name](**arguments)``; a function raising ``ToolError`` fails the tool.

    Also returns the list that records each (tool, arguments) call in order.
    """
    log: list[tuple[str, dict[str, Any]]] = []

    def make(name: str, produce: Callable[..., str]):
        async def tool(**arguments: Any) -> str:
            log.append((name, arguments))
            return produce(**arguments)

        return tool

    return Toolbox({name: make(name, produce) for name, produce in outputs.items()}), log


def failing(message: str) -> Callable[..., str]:
    def produce(**_: Any) -> str:
        raise ToolError(message)

    return produce


JUDGES = {"math": math_scorer, "lexical": lexical_scorer}


async def score(
    episode: Episode, target: str | list[str], judge: str, answer: str = "final"
) -> dict[str, float]:
    """The ``judge`` scorer's value for ``episode``'s ``answer``: stored on a sample as the solver does, then scored."""
    state = TaskState(
        model=ModelName("mockllm/model"), sample_id="s", epoch=1, input=episode.question, messages=[]
    )
    store_episode(state, episode)
    result = await JUDGES[judge](answer)(state, Target(target))
    return result.value


@pytest.fixture
def doubles() -> SimpleNamespace:
    """``doubles.Chat`` (ScriptedChat), ``doubles.toolbox`` (fake_toolbox), ``doubles.failing`` (a failing tool),
    ``doubles.score`` (a real judge's score of an Episode)."""
    return SimpleNamespace(Chat=ScriptedChat, toolbox=fake_toolbox, failing=failing, score=score)


class PageServer:
    """Static pages on 127.0.0.1: ``server.pages[path] = (content_type, body)`` (the query string is ignored);
    ``server.seen`` lists the paths asked for; any other path is a 404."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[str, str]] = {}
        self.seen: list[str] = []
        pages, seen = self.pages, self.seen

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                path = urlsplit(self.path).path
                seen.append(path)
                content_type, body = pages.get(path, ("text/plain", "not found"))
                data = body.encode()
                self.send_response(200 if path in pages else 404)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def page_server() -> Iterator[PageServer]:
    server = PageServer()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
