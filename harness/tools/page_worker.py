"""Page extraction in a child process, so a huge or pathological page neither stalls the event loop (every other
sample waits while one parses) nor runs without bound.

``run_in_worker(function, args, seconds=..., what=...)`` calls ``function(*args)`` in a process forked from a
forkserver that has the extraction stack (``harness.tools.browse``: trafilatura, pypdf) imported once, and returns
its result. A child still running after ``seconds`` is killed and the call is a ``ToolError`` naming
``browse_extract_seconds``; so is a child that dies. A ``ToolError`` raised in the child comes back as it is, any
other exception as a ``ToolError`` naming it. The event loop only waits for the child's pipe to become readable.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from typing import Any, TypeVar

from harness.systems.types import ToolError

ResultT = TypeVar("ResultT")
PRELOAD = ["__main__", "harness.tools.browse"]
"""Imported once by the forkserver, so each child starts with them loaded."""


@functools.cache
def _context() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _serve(sender: Connection, function: Callable[..., Any], args: tuple) -> None:
    """The child: run ``function`` and send back ``(ok, result or message)``."""
    try:
        outcome = (True, function(*args))
    except ToolError as err:
        outcome = (False, str(err))
    except Exception as err:  # anything else the extractor raises is reported, not lost with the child
        outcome = (False, f"the page reader failed ({type(err).__name__}: {err})")
    sender.send(outcome)
    sender.close()


async def _readable(connection: Connection) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(connection.fileno(), lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(connection.fileno())


async def run_in_worker(
    function: Callable[..., ResultT], args: tuple, *, seconds: float, what: str
) -> ResultT:
    """``function(*args)`` run in a child process killed after ``seconds``; ``what`` starts error messages."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_serve, args=(sender, function, args), daemon=True)
    started = asyncio.ensure_future(asyncio.to_thread(child.start))
    try:
        await started
        sender.close()
        async with asyncio.timeout(seconds):
            await _readable(receiver)
        ok, value = receiver.recv()
    except TimeoutError:
        raise ToolError(
            f"{what}: reading the page took over {seconds:g} s (browse_extract_seconds)"
        ) from None
    except EOFError:
        child.join(1)
        raise ToolError(
            f"{what}: the page reader ended without an answer (exit code {child.exitcode})"
        ) from None
    finally:
        await asyncio.wait([started])
        sender.close()
        if child.pid is not None:
            child.kill()
            child.join()
        receiver.close()
    if not ok:
        raise ToolError(value if value.startswith(what) else f"{what}: {value}")
    return value
