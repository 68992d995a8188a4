"""Gather concurrent async requests into batches for a blocking batch function run in a worker thread.

Inspect calls a provider's ``generate`` once per sample, concurrently. ``RequestQueue`` is what every scheduler
shares: ``submit`` queues a request and awaits its future, one worker task per event loop serves the queue, and
``gather_window`` waits until ``batch_size`` requests wait or ``wait_ms`` passed since the oldest arrived.

``RequestBatcher`` is static batching: a batch is launched when the window closes, one batch runs at a time (the
model is busy), and requests that arrive meanwhile form the next batch; every request of a batch resolves when
the whole batch is done. A batch function's exception is raised to every request of that batch. The continuous
(iteration-level) scheduler is ``mara_bench.harness.providers.scheduler.ContinuousBatcher``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from mara_bench.harness.providers.trace import RecentSizes

Request = TypeVar("Request")
Result = TypeVar("Result")


@dataclass(eq=False)
class Waiting(Generic[Request]):
    """A submitted request and the future its caller awaits."""

    request: Request
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)


class RequestQueue(Generic[Request, Result]):
    """Concurrently submitted requests, served by ``serve`` (a subclass's scheduling policy)."""

    def __init__(self, *, batch_size: int = 16, wait_ms: float = 10.0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if wait_ms < 0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {wait_ms}")
        self.batch_size = batch_size
        self.wait_seconds = wait_ms / 1000
        self.batch_sizes = RecentSizes()
        """The number of requests started together, for every recent batch (for tests and benchmarks)."""
        self.waiting: list[Waiting[Request]] = []
        self._arrival: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None

    async def submit(self, request: Request) -> Result:
        """Queue ``request`` and wait for its result."""
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done() or self._worker.get_loop() is not loop:
            self.waiting = [w for w in self.waiting if w.future.get_loop() is loop and not w.future.done()]
            self._arrival = asyncio.Event()
            self._worker = loop.create_task(self.serve())
        waiting = Waiting(request, loop.create_future())
        self.waiting.append(waiting)
        self._arrival.set()  # type: ignore[union-attr]
        return await waiting.future

    async def serve(self) -> None:
        """Serve ``self.waiting`` until it is empty (the worker task of the current event loop)."""
        raise NotImplementedError

    async def gather_window(self) -> None:
        """Wait until a full batch waits or the oldest waiting request has waited ``wait_seconds``."""
        arrival = self._arrival
        assert arrival is not None
        while len(self.waiting) < self.batch_size:
            remaining = self.waiting[0].arrived + self.wait_seconds - time.monotonic()
            if remaining <= 0:
                return
            arrival.clear()
            try:
                await asyncio.wait_for(arrival.wait(), timeout=remaining)
            except TimeoutError:
                return

    def take(self, count: int) -> list[Waiting[Request]]:
        """Remove the ``count`` oldest waiting requests from the queue; return those not cancelled meanwhile."""
        taken, self.waiting = self.waiting[:count], self.waiting[count:]
        return [w for w in taken if not w.future.done()]


def settle(future: asyncio.Future, outcome: Any) -> None:
    """Hand ``outcome`` -- a result, or an exception to raise -- to a caller that still waits (a cancelled
    caller has gone)."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


class RequestBatcher(RequestQueue[Request, Result]):
    """Runs ``run_batch(requests) -> results`` (same order) on batches of concurrently submitted requests."""

    def __init__(
        self,
        run_batch: Callable[[list[Request]], Sequence[Result]],
        *,
        batch_size: int = 16,
        wait_ms: float = 10.0,
    ):
        super().__init__(batch_size=batch_size, wait_ms=wait_ms)
        self._run_batch = run_batch

    async def serve(self) -> None:
        while self.waiting:
            await self.gather_window()
            batch = self.take(self.batch_size)
            if batch:
                await self._run(batch)

    async def _run(self, batch: list[Waiting[Request]]) -> None:
        self.batch_sizes.append(len(batch))
        try:
            results: Sequence[Any] = await asyncio.to_thread(self._run_batch, [w.request for w in batch])
        except Exception as error:  # every request of the batch sees the batch's failure
            results = [error] * len(batch)
        for waiting, result in zip(batch, results, strict=True):
            settle(waiting.future, result)
