"""Gather concurrent async requests into batches for a blocking batch function run in a worker thread.

Inspect calls a provider's ``generate`` once per sample, concurrently. ``RequestBatcher.submit`` queues a request;
a batch is launched as soon as ``batch_size`` requests wait, or ``wait_ms`` after the oldest waiting request
arrived, whichever comes first. One batch runs at a time (the model is busy), and requests that arrive meanwhile
form the next batch. A batch function's exception is raised to every request of that batch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Request = TypeVar("Request")
Result = TypeVar("Result")


@dataclass
class _Waiting(Generic[Request]):
    request: Request
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)


class RequestBatcher(Generic[Request, Result]):
    """Runs ``run_batch(requests) -> results`` (same order) on batches of concurrently submitted requests."""

    def __init__(
        self,
        run_batch: Callable[[list[Request]], Sequence[Result]],
        *,
        batch_size: int = 16,
        wait_ms: float = 10.0,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if wait_ms < 0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {wait_ms}")
        self._run_batch = run_batch
        self.batch_size = batch_size
        self.wait_seconds = wait_ms / 1000
        self.batch_sizes: list[int] = []
        """The size of every batch run so far (for tests and benchmarks)."""
        self._waiting: list[_Waiting[Request]] = []
        self._arrival: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None

    async def submit(self, request: Request) -> Result:
        """Queue ``request`` and wait for its result."""
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done() or self._worker.get_loop() is not loop:
            self._waiting = [w for w in self._waiting if w.future.get_loop() is loop and not w.future.done()]
            self._arrival = asyncio.Event()
            self._worker = loop.create_task(self._serve())
        waiting = _Waiting(request, loop.create_future())
        self._waiting.append(waiting)
        self._arrival.set()  # type: ignore[union-attr]
        return await waiting.future

    async def _serve(self) -> None:
        while self._waiting:
            await self._gather_window()
            batch, self._waiting = self._waiting[: self.batch_size], self._waiting[self.batch_size :]
            batch = [w for w in batch if not w.future.cancelled()]
            if batch:
                await self._run(batch)

    async def _gather_window(self) -> None:
        """Wait until a full batch waits or the oldest waiting request has waited ``wait_seconds``."""
        arrival = self._arrival
        assert arrival is not None
        while len(self._waiting) < self.batch_size:
            remaining = self._waiting[0].arrived + self.wait_seconds - time.monotonic()
            if remaining <= 0:
                return
            arrival.clear()
            try:
                await asyncio.wait_for(arrival.wait(), timeout=remaining)
            except TimeoutError:
                return

    async def _run(self, batch: list[_Waiting[Request]]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            results: Sequence[Any] = await asyncio.to_thread(self._run_batch, [w.request for w in batch])
        except Exception as error:  # every request of the batch sees the batch's failure
            for waiting in batch:
                if not waiting.future.done():
                    waiting.future.set_exception(error)
            return
        for waiting, result in zip(batch, results, strict=True):
            if not waiting.future.done():
                waiting.future.set_result(result)
