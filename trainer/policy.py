"""The policy being trained, served as a harness ``Chat``, so rollouts run the same system code as evaluation.

``PolicyChat`` renders messages with the tokenizer's chat template and samples with the shared generation core
(``harness.providers.generation``, transformers on CPU or GPU), or with any other ``Generator`` of the same
contract -- the vLLM engine of ``trainer.vllm_rollout`` on a GPU. Every ``Reply`` carries the prompt ids, the
response ids (ending with the end-of-turn token unless truncated) and their logprobs under the model's unmodified
distribution. Two schedulers batch the calls of concurrent episodes (``asyncio.gather`` over a group, or parallel
agents inside one episode):

* ``static``: the calls pending in one event-loop tick run as ONE generator call, each row with its own sampling
  settings; a call issued later waits until that whole batch has finished (the longest row).
* ``continuous`` (transformers only): one ``DecodeBatch`` driven from the event loop, without threads or clocks.
  Each round admits every pending call (prefill), runs one decode step, answers the calls whose rows finished,
  then yields the loop ``SETTLE_TICKS`` times so that their continuations can issue their next calls, which join
  at the next step (once only when no call was answered: then no continuation is waiting to run). It stops when nothing runs or waits. Admissions depend only on the computation, so the same
  inputs and torch RNG state give the same tokens; seeded and greedy rows get the same tokens as under ``static``
  (a row's numbers do not depend on its batch mates). A failing decode step fails the calls running in it; a
  failing admission fails the calls being admitted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.providers.batching import settle
from harness.providers.generation import Completion, DecodeBatch, Sampling, generate, render_prompt
from harness.systems.types import Message, Reply
from trainer.config import ROLLOUT_SCHEDULERS as SCHEDULERS

SAMPLING_FIELDS = tuple(f.name for f in dataclasses.fields(Sampling))

SETTLE_TICKS = 32
"""Event-loop ticks the continuous scheduler yields after answering calls before it admits new ones: each tick
runs one generation of ready callbacks (a task waking, a ``gather`` completing, a new task starting), so a call
issued that many hand-offs after its predecessor's answer joins the very next decode step (later ones, one step
later). A tick without ready work costs microseconds; a decode step costs milliseconds."""

PROMPT_CACHE_SIZE = 4096
"""Rendered prompts a ``PolicyChat`` keeps (a GRPO group sends each question's prompt ``group_size`` times; the
chat template's rendering costs about as much as a decode step of the tiny model). Full: it starts over."""

Generator = Callable[[list[list[int]], list[Sampling]], list[Completion]]
"""Completes each prompt (token ids) with its own ``Sampling``, in order (``harness.providers.generation``'s
contract: response ids with their logprobs under the unmodified model distribution)."""


@dataclass(eq=False)
class _Request:
    prompt_ids: list[int]
    sampling: Sampling
    future: asyncio.Future = field(repr=False)


class PolicyChat:
    """A ``Chat`` backed by a live policy model; concurrent calls are batched (see the module docstring).

    ``generator`` replaces transformers generation on ``model`` (e.g. a vLLM engine synced to the policy) and
    runs under the ``static`` scheduler only. ``batch`` is the continuous scheduler's ``DecodeBatch`` (its
    ``step_sizes`` record the rows of every decode step), ``None`` under ``static``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        defaults: Sampling | None = None,
        name: str = "policy",
        generator: Generator | None = None,
        scheduler: str = "static",
    ):
        if scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
        if scheduler == "continuous" and generator is not None:
            raise ValueError(
                "the continuous scheduler drives transformers generation; use 'static' with a generator"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.generator = generator
        self.defaults = defaults or Sampling()
        self.name = name
        self.scheduler = scheduler
        self.batch = DecodeBatch(model, tokenizer) if scheduler == "continuous" else None
        self._rendered: dict[str, list[int]] = {}
        self._pending: list[_Request] = []
        self._driver: asyncio.Task | None = None

    def sampling(self, overrides: dict[str, Any]) -> Sampling:
        """The default sampling settings with a call's overrides applied; unknown settings are an error."""
        unknown = sorted(set(overrides) - set(SAMPLING_FIELDS))
        if unknown:
            raise ValueError(f"unknown sampling settings {unknown}; valid: {', '.join(SAMPLING_FIELDS)}")
        return dataclasses.replace(self.defaults, **overrides)

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        prompt_ids = self._render(messages)
        loop = asyncio.get_running_loop()
        if self._driver is not None and self._driver.get_loop() is not loop:
            self._abandon_stopped_loop()
        request = _Request(prompt_ids, self.sampling(sampling), loop.create_future())
        self._pending.append(request)
        if self._driver is None:
            drive = self._run_pending() if self.batch is None else self._run_continuous(self.batch)
            self._driver = loop.create_task(drive)
        completion: Completion = await request.future
        return Reply(
            text=completion.text,
            finish_reason=completion.finish_reason,
            input_tokens=len(prompt_ids),
            output_tokens=len(completion.response_ids),
            model=self.name,
            prompt_ids=prompt_ids,
            response_ids=completion.response_ids,
            logprobs=completion.logprobs,
        )

    def _render(self, messages: list[Message]) -> list[int]:
        """``render_prompt``'s token ids for ``messages`` (a fresh list each time), rendered once per content."""
        key = json.dumps(messages, sort_keys=True)
        if key not in self._rendered:
            if len(self._rendered) >= PROMPT_CACHE_SIZE:
                self._rendered.clear()
            self._rendered[key] = render_prompt(self.tokenizer, messages)
        return list(self._rendered[key])

    def _abandon_stopped_loop(self) -> None:
        """Forget the scheduler task and the calls of an event loop that stopped without cancelling them
        (``run_until_complete``, then ``close``): no one can await them any more."""
        self._driver, self._pending = None, []
        if self.batch is not None:
            self.batch.discard()

    async def _run_pending(self) -> None:
        """Static scheduling: the calls pending after one tick, as one generator call."""
        await asyncio.sleep(0)  # let every coroutine that is ready enqueue its request first
        batch, self._pending, self._driver = self._pending, [], None
        prompts, settings = [r.prompt_ids for r in batch], [r.sampling for r in batch]
        try:
            if self.generator is not None:
                completions = self.generator(prompts, settings)
            else:
                completions = generate(self.model, self.tokenizer, prompts, settings)
        except Exception as err:  # every waiting call must hear about the failure
            completions = [err] * len(batch)
        for request, completion in zip(batch, completions, strict=True):
            settle(request.future, completion)

    async def _run_continuous(self, batch: DecodeBatch) -> None:
        """Continuous scheduling: settle, admit, step, answer -- until nothing runs or waits."""
        driver = asyncio.current_task()
        try:
            answered = True
            while True:  # after a step that answered no call, no continuation can be waiting to be issued
                for _ in range(SETTLE_TICKS if answered else 1):
                    await asyncio.sleep(0)
                self._admit(batch)
                if not batch.rows:
                    return
                answered = self._step(batch)
        finally:  # normally nothing is left; a cancelled driver (its loop closing) cancels what it holds
            # (a driver abandoned with its stopped loop, finalised later, leaves the new loop's calls alone)
            if self._driver is driver:
                self._driver = None
                for request in [row.key for row in batch.rows] + self._pending:
                    request.future.cancel()
                self._pending = []
                batch.clear()

    def _admit(self, batch: DecodeBatch) -> None:
        newcomers = [r for r in self._pending if not r.future.done()]
        self._pending = []
        batch.drop(row.key for row in batch.rows if row.key.future.done())  # callers that have gone
        if not newcomers:
            return
        try:
            batch.admit(
                newcomers,
                [r.prompt_ids for r in newcomers],
                [r.sampling for r in newcomers],
                [0] * len(newcomers),
            )
        except Exception as err:  # the running rows are untouched; the newcomers fail
            for request in newcomers:
                settle(request.future, err)

    def _step(self, batch: DecodeBatch) -> bool:
        """One decode step; whether it answered any call."""
        error = None
        try:
            batch.step()
        except Exception as err:
            error = err
        outcomes = batch.take_outcomes(error)  # rows finished before a failure keep their result
        for request, outcome in outcomes:
            settle(request.future, outcome)
        return bool(outcomes)
