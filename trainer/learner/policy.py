"""The policy being trained, served as a harness ``Chat``, so rollouts run the same system code as evaluation.

``PolicyChat`` renders messages with the tokenizer's chat template and samples with the shared generation core
(``mara_bench.harness.providers.generation``, transformers on CPU or GPU), or with any other ``Generator`` of the same
contract -- the vLLM engine of ``mara_bench.trainer.rollouts.vllm_rollout``. Under per-role LoRA adapters (``adapters``)
each call decodes through its role's adapter, calls of different roles in one batch. A call that continues an earlier
conversation is given the token ids that conversation was generated with, not a re-tokenisation of its text
(``mara_bench.trainer.token_turns``). Every ``Reply`` carries the prompt ids, the response ids (ending with the
end-of-turn token unless truncated) and their logprobs under the model's unmodified distribution. Two
schedulers batch the calls of concurrent episodes (``asyncio.gather`` over a group, or parallel agents inside
one episode):

* ``static``: the calls pending together run as ONE generator call, each row with its own sampling settings, in a
  worker thread -- the ``local/`` provider's static scheduler (``mara_bench.harness.providers.batching.RequestBatcher``) with
  no wait window; calls issued meanwhile form the next batch, after that whole batch has finished (the longest
  row).
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
from collections.abc import Callable, Sequence
from typing import Any

from mara_bench.core.episodes import Message, Reply
from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.batching import RequestBatcher, Waiting, settle
from mara_bench.harness.providers.generation import Completion, DecodeBatch, generate
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.providers.scheduler import SETTLE_TICKS, GenerationRequest
from mara_bench.trainer.config import ROLLOUT_SCHEDULERS as SCHEDULERS
from mara_bench.trainer.episode_seeds import call_seed
from mara_bench.trainer.learner.adapters import RoleAdapters
from mara_bench.trainer.token_turns import TurnIds

SAMPLING_FIELDS = tuple(f.name for f in dataclasses.fields(Sampling))

ALL_PENDING = 2**31
"""The static scheduler's batch size: every pending call joins (a step's calls are bounded by its episodes)."""

PROMPT_CACHE_SIZE = 4096
"""Rendered prompts a ``PolicyChat`` keeps (a GRPO group sends each question's prompt ``group_size`` times; the
chat template's rendering costs about as much as a decode step of the tiny model). Full: it starts over."""

Generator = Callable[[list[list[int]], list[Sampling]], list[Completion]]
"""Completes each prompt (token ids) with its own ``Sampling``, in order (``mara_bench.harness.providers.generation``'s
contract: response ids with their logprobs under the unmodified model distribution)."""


def with_overrides(defaults: Sampling, overrides: dict[str, Any]) -> Sampling:
    """``defaults`` with a call's sampling overrides applied; unknown settings are an error."""
    unknown = sorted(set(overrides) - set(SAMPLING_FIELDS))
    if unknown:
        raise ValueError(f"unknown sampling settings {unknown}; valid: {', '.join(SAMPLING_FIELDS)}")
    return dataclasses.replace(defaults, **overrides)


class PolicyChat:
    """A ``Chat`` backed by a live policy model; concurrent calls are batched (see the module docstring).

    ``generator`` replaces transformers generation on ``model`` (e.g. a vLLM engine synced to the policy) and
    runs under the ``static`` scheduler only. ``batch`` is the continuous scheduler's ``DecodeBatch`` (its
    ``step_sizes`` record the rows of every decode step), ``None`` under ``static``; ``static`` is the static
    scheduler's ``RequestBatcher`` (its ``batch_sizes`` record every batch), ``None`` under ``continuous``.
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
        context_tokens: int | None = None,
        adapters: RoleAdapters | None = None,
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
        self.context_tokens = context_tokens
        """Most tokens a call's prompt and response hold together (``rollout.max_context_tokens``); None: no cap."""
        self.adapters = adapters
        """Per-role LoRA adapters (``model.lora``): each call decodes through its role's, in a mixed batch."""
        self.batch = DecodeBatch(model, tokenizer) if scheduler == "continuous" else None
        self.static = (
            RequestBatcher(self._complete, batch_size=ALL_PENDING, wait_ms=0)
            if scheduler == "static"
            else None
        )
        self._rendered: dict[str, list[int]] = {}
        self.turns = TurnIds(getattr(tokenizer, "eos_token_id", None))
        """The token ids each conversation was generated with, which its next turn continues from."""
        self._pending: list[Waiting[GenerationRequest]] = []
        self._driver: asyncio.Task | None = None

    def sampling(self, overrides: dict[str, Any]) -> Sampling:
        """The default sampling settings with a call's overrides applied; unknown settings are an error."""
        return with_overrides(self.defaults, overrides)

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        prompt_ids = self.turns.prompt(messages, self._render)
        settings = self.sampling(sampling)
        if self.context_tokens is not None:  # the conversation so far is this call's prompt
            room = self.context_tokens - len(prompt_ids)
            if room < 1:
                return Reply(
                    text="",
                    finish_reason="length",
                    input_tokens=len(prompt_ids),
                    model=self.name,
                    prompt_ids=prompt_ids,
                    response_ids=[],
                    logprobs=[],
                )
            settings = dataclasses.replace(settings, max_tokens=min(settings.max_tokens, room))
        if settings.seed is None:
            settings = dataclasses.replace(settings, seed=call_seed(prompt_ids))
        if self.adapters is not None:
            settings = dataclasses.replace(settings, adapter=self.adapters.adapter(role))
        request = (prompt_ids, settings, 0)
        if self.static is not None:
            completion = await self.static.submit(request)
        else:
            completion = await self._continuous(request)
        self.turns.record(messages, completion.text, prompt_ids + completion.response_ids)
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

    def _render(self, messages: list[Message], *, add_generation_prompt: bool = True) -> list[int]:
        """``render_prompt``'s token ids for ``messages`` (a fresh list each time), rendered once per content."""
        key = json.dumps([messages, add_generation_prompt], sort_keys=True)
        if key not in self._rendered:
            if len(self._rendered) >= PROMPT_CACHE_SIZE:
                self._rendered.clear()
            self._rendered[key] = render_prompt(
                self.tokenizer, messages, add_generation_prompt=add_generation_prompt
            )
        return list(self._rendered[key])

    def _complete(self, requests: Sequence[GenerationRequest]) -> list[Completion]:
        """Static scheduling: the calls pending together, as one generator call."""
        prompts, settings = [r[0] for r in requests], [r[1] for r in requests]
        if self.generator is not None:
            return self.generator(prompts, settings)
        return generate(self.model, self.tokenizer, prompts, settings)

    async def _continuous(self, request: GenerationRequest) -> Completion:
        """Queue ``request`` for the continuous driver (started when none runs) and wait for its completion."""
        loop = asyncio.get_running_loop()
        if self._driver is not None and self._driver.get_loop() is not loop:
            self._abandon_stopped_loop()
        waiting: Waiting[GenerationRequest] = Waiting(request, loop.create_future())
        self._pending.append(waiting)
        if self._driver is None:
            self._driver = loop.create_task(self._run_continuous(self.batch))
        return await waiting.future

    def _abandon_stopped_loop(self) -> None:
        """Forget the scheduler task and the calls of an event loop that stopped without cancelling them
        (``run_until_complete``, then ``close``): no one can await them any more."""
        self._driver, self._pending = None, []
        self.batch.discard()

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
        newcomers = [w for w in self._pending if not w.future.done()]
        self._pending = []
        batch.drop(row.key for row in batch.rows if row.key.future.done())  # callers that have gone
        if not newcomers:
            return
        try:
            batch.admit(newcomers, *zip(*(w.request for w in newcomers), strict=True))
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
