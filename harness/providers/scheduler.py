"""Continuous (iteration-level) batching of concurrent generation requests on one ``DecodeBatch``.

``ContinuousBatcher.submit((prompt_ids, sampling, top_logprobs))`` returns the request's ``Completion``. A worker
task (one per event loop) keeps a running batch of at most ``batch_size`` rows and, between decode steps, admits
waiting requests into its free rows (their prompts are prefilled and their KV cache merged into the running
one) and retires finished rows; each request's future resolves as soon as ITS row finishes. Decode steps run in
a worker thread, several in a row, until a row finishes, a request arrives or a caller cancels.

When the batch is empty the worker lets the requests submitted together arrive and starts at once: it yields
the event loop once, and only when that tick brought a newcomer does it yield ``SETTLE_TICKS`` more, again while
new ones keep arriving (at most until ``batch_size`` wait or ``wait_ms`` passed). The calls of one
``asyncio.gather`` pass Inspect's awaits in step, so they are all queued before the worker's first tick; a lone
request therefore starts after one tick, as fast as unbatched generation would. It does NOT sit out a wall-clock
window as static batching does, since a request arriving later joins the running batch at the next step anyway.
While rows run, newcomers join at the next step. A failing prefill fails the requests being admitted; a failing
decode step fails every row in it (the batch then starts afresh).
A cancelled request's row is dropped from the batch. A worker starts afresh: rows and completions of an earlier
event loop (one that stopped without cancelling its requests) are dropped, once that loop's decode thread, which
nothing stops, has finished its step (one thread at a time works on the batch). ``batch_sizes`` records how many
requests were admitted together each time and ``step_sizes`` how many rows every decode step had.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from mara_bench.harness.providers.batching import RequestQueue, Waiting, settle
from mara_bench.harness.providers.generation import Completion, DecodeBatch
from mara_bench.harness.providers.sampling import Sampling

SETTLE_TICKS = 32
"""Event-loop ticks in a settling round after the first tick brought a newcomer: enough for requests trickling in
(each passing a few awaits inside Inspect) to reach ``submit``; a tick without ready work costs microseconds."""

GenerationRequest = tuple[list[int], Sampling, int]
"""``(prompt_ids, sampling, top_logprobs)``."""


class ContinuousBatcher(RequestQueue[GenerationRequest, Completion]):
    """Serves generation requests with iteration-level scheduling on ``batch`` (see the module docstring)."""

    def __init__(self, batch: DecodeBatch, *, batch_size: int = 16, wait_ms: float = 10.0):
        super().__init__(batch_size=batch_size, wait_ms=wait_ms)
        self.batch = batch
        self._wake = threading.Event()
        """Set by the event loop to make the decode thread hand control back (arrival or cancellation)."""
        self._batch_in_use = threading.Lock()
        """Held by the thread working on ``batch`` (an earlier event loop's decode thread may still run)."""

    @property
    def step_sizes(self) -> list[int]:
        return self.batch.step_sizes

    async def submit(self, request: GenerationRequest) -> Completion:
        self._wake.set()
        try:
            return await super().submit(request)
        except asyncio.CancelledError:
            self._wake.set()
            raise

    async def serve(self) -> None:
        await self._on_batch(self.batch.discard)  # an earlier loop's rows and completions
        while self.waiting or self.batch.rows:
            if not self.batch.rows:
                await self._settle()
            self._wake.clear()
            self.batch.drop(row.key for row in self.batch.rows if row.key.future.done())
            await self._admit(self.take(self.batch_size - len(self.batch.rows)))
            if self.batch.rows:
                await self._advance()

    async def _settle(self) -> None:
        """Yield the event loop until a tick (the first one) or a round of ``SETTLE_TICKS`` ticks (any later one)
        brings no new request, a full batch waits, or ``wait_ms`` passed since the oldest arrived."""
        deadline = self.waiting[0].arrived + self.wait_seconds
        ticks = 1
        while len(self.waiting) < self.batch_size and time.monotonic() < deadline:
            before = len(self.waiting)
            for _ in range(ticks):
                await asyncio.sleep(0)
            if len(self.waiting) == before:
                return
            ticks = SETTLE_TICKS

    async def _admit(self, newcomers: list[Waiting[GenerationRequest]]) -> None:
        if not newcomers:
            return
        self.batch_sizes.append(len(newcomers))
        prompts, settings, tops = zip(*(w.request for w in newcomers), strict=True)
        try:
            await self._on_batch(self.batch.admit, newcomers, prompts, settings, tops)
        except Exception as error:  # the running rows are untouched; only the newcomers fail
            for waiting in newcomers:
                settle(waiting.future, error)

    async def _advance(self) -> None:
        error = None
        try:
            await self._on_batch(self.batch.run, self._wake)
        except Exception as err:
            error = err
        # not in a ``finally``: a worker abandoned with its closed loop must not take the outcomes of the next
        # loop's rows when it is finalised
        for waiting, outcome in self.batch.take_outcomes(error):
            settle(waiting.future, outcome)

    async def _on_batch(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(*args)`` in a worker thread, once no other thread works on the batch."""

        def exclusively() -> Any:
            with self._batch_in_use:
                return work(*args)

        return await asyncio.to_thread(exclusively)
