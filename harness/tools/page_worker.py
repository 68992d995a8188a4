"""Page reading in worker processes, so a huge or pathological page neither stalls the event loop (every other
sample waits while one parses) nor runs without bound.

``read_in_worker(page, seconds=...)`` hands one fetched page to a worker (``python -m mara_bench.harness.tools.page_worker``,
which has the extraction stack -- trafilatura, pypdf -- imported once and reads ``read_page`` requests from its
stdin) and returns ``(title, text)``. A worker still reading after ``seconds`` is killed and the call is a
``TransientToolError`` naming ``browse_extract_seconds`` (never recorded by the tool cache); a worker that dies is a
``ToolError``. The event loop only waits: the page
goes out and the text comes back in a thread. Idle workers are kept for the next page (up to ``MAX_IDLE``), in
any event loop; they exit when the harness does (their stdin closes). ``warm_up()`` starts them before the first
page (browse's toolbox calls it), and a worker's start-up is never counted in ``browse_extract_seconds``: a worker
says when it is ready, and only its reading of the page is timed.

The channel carries JSON and raw bytes only (no pickle), so a worker subverted by a hostile page cannot make the
harness run code by what it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import IO

from mara_bench.core.episodes import ToolError, TransientToolError
from mara_bench.harness.tools.page_text import Page, read_page

MAX_IDLE = 4
"""Workers kept alive between pages (each holds the extraction stack, about 100 MB)."""
START_SECONDS = 120.0
"""Seconds a worker may take to start (import the extraction stack) before a page waits no longer."""
FRAME = struct.Struct("<I")
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The folder holding the ``harness`` package, put on the workers' ``PYTHONPATH``."""


WARM_UP_PAGE = Page(
    "text/html", b"<html><body><p>A page read once at start-up.</p></body></html>", "utf-8", "", 100
)


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(FRAME.pack(len(data)) + data)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes:
    """One frame; ``EOFError`` when the other side has gone."""
    prefix = stream.read(FRAME.size)
    if len(prefix) < FRAME.size:
        raise EOFError
    data = stream.read(FRAME.unpack(prefix)[0])
    if len(data) < FRAME.unpack(prefix)[0]:
        raise EOFError
    return data


class _Worker:
    """One worker process: one page at a time, request and reply as frames on its stdin and stdout. It says it is
    ready (its extraction stack imported) with one frame first."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.started = False
        self._starting = threading.Lock()

    def wait_started(self) -> None:
        """Block until the worker has said it is ready (at once when it has); ``EOFError`` when it died."""
        with self._starting:
            if not self.started:
                json.loads(_read_frame(self.process.stdout))
                self.started = True

    def read(self, page: Page) -> dict:
        header = {key: value for key, value in asdict(page).items() if key != "body"}
        _write_frame(self.process.stdin, json.dumps(header).encode())
        _write_frame(self.process.stdin, page.body)
        return json.loads(_read_frame(self.process.stdout))

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):  # a broken pipe to a killed worker
                stream.close()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _take() -> _Worker:
    with _idle_lock:
        while _idle:
            worker = _idle.pop()
            if worker.process.poll() is None:
                return worker
    return _Worker()


def _keep(worker: _Worker) -> None:
    with _idle_lock:
        if len(_idle) < MAX_IDLE:
            _idle.append(worker)
            return
    worker.kill()


def warm_up(count: int = MAX_IDLE) -> None:
    """Start workers until ``count`` are idle, without waiting for them (browse's toolbox calls this when it is
    built, so the first pages find a worker ready)."""
    with _idle_lock:
        missing = count - sum(worker.process.poll() is None for worker in _idle)
        _idle.extend(_Worker() for _ in range(max(missing, 0)))


async def read_in_worker(page: Page, *, seconds: float) -> tuple[str, str]:
    """``(title, text)`` of ``page`` read by a worker process that is killed after ``seconds``; a worker's start
    (its imports, which a loaded machine slows) is waited for first, up to ``START_SECONDS``, and not counted."""
    worker = _take()
    try:
        async with asyncio.timeout(START_SECONDS):
            await asyncio.to_thread(worker.wait_started)
    except TimeoutError:
        worker.kill()
        raise TransientToolError(
            f"browse: no page reader started within {START_SECONDS:g} s to read {page.url}; the machine is "
            "overloaded"
        ) from None
    except (EOFError, OSError, ValueError):
        worker.kill()
        raise ToolError(
            f"browse: the page reader could not start (exit code {worker.process.returncode})"
        ) from None
    except BaseException:
        worker.kill()
        raise
    try:
        async with asyncio.timeout(seconds):
            reply = await asyncio.to_thread(worker.read, page)
    except TimeoutError:
        worker.kill()
        raise TransientToolError(  # a loaded machine may read it in time tomorrow
            f"browse: reading {page.url} took over {seconds:g} s (browse_extract_seconds)"
        ) from None
    except (EOFError, OSError, ValueError):
        worker.kill()
        raise ToolError(
            f"browse: the page reader ended without an answer for {page.url} (exit code {worker.process.returncode})"
        ) from None
    except BaseException:  # cancelled (the call's deadline): the worker may still be busy
        worker.kill()
        raise
    _keep(worker)
    if not reply["ok"]:
        raise ToolError(reply["message"])
    return reply["title"], reply["text"]


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The worker: read pages from ``requests`` until it closes, answer each on ``replies``."""
    read_page(
        WARM_UP_PAGE
    )  # the extractor's first page sets it up (seconds on a loaded machine): not a user's
    _write_frame(replies, json.dumps({"ready": True}).encode())
    while True:
        try:
            header = json.loads(_read_frame(requests))
            page = Page(body=_read_frame(requests), **header)
        except EOFError:
            return
        try:
            title, text = read_page(page)
            reply = {"ok": True, "title": title, "text": text}
        except ToolError as err:
            reply = {"ok": False, "message": str(err)}
        except Exception as err:  # anything else the extractor raises is reported, not lost with the worker
            reply = {"ok": False, "message": f"browse: the page reader failed ({type(err).__name__}: {err})"}
        _write_frame(replies, json.dumps(reply).encode())


if __name__ == "__main__":
    channel = sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's stray print cannot corrupt the channel
    serve(sys.stdin.buffer, channel)
