"""Segment rollouts (MarsRL, arXiv:2511.11373 §3.4): a ``Chat`` over the sampler's snapshot of the policy that decodes in
rounds of at most ``segment_tokens`` new tokens per call.

Each ``run_round`` takes the calls issued since the last round and the calls left unfinished by it, and decodes one
segment of each as one batch (``mara_bench.harness.providers.generation.generate`` on prompt + the tokens generated so far):
a call that ends within its segment (end-of-turn, stop string, its own ``max_tokens`` or the context) is answered at
once; the others carry over, their prefix re-read under the weights of the next round -- which may be newer, within
the trainer's staleness bound (``mara_bench.trainer.rollouts.pipelined``). With ``segment_tokens`` at least
``max_tokens`` a round runs every call to its end (pipelined rollouts without segments).

Behaviour logprobs. As each token is sampled, the generation core also records its logprob at the sampling
temperature -- the training temperature, at which the learner scores (``Completion.tempered_logprobs``) -- under
the weights that sample it; ``behaviour(reply)`` hands them out with the policy version the call started under. The
learner's importance ratios use them, never its own newer weights (a call may not change the temperature).
``Reply.logprobs`` keep the generation core's meaning (the unmodified distribution, temperature 1). Rows draw from
torch's global generator in row order, so with the same seed and unchanged weights a segmented call gets the same
tokens as an unsegmented one (per-call ``seed`` settings are refused: a fresh row generator per segment would not)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mara_bench.core.episodes import Message, Reply
from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.batching import settle
from mara_bench.harness.providers.generation import context_length, generate
from mara_bench.harness.providers.sampling import Sampling, final_text, stop_token_ids
from mara_bench.harness.providers.scheduler import SETTLE_TICKS
from mara_bench.trainer.learner.policy import with_overrides


@dataclass(frozen=True)
class Behaviour:
    """How the sampler produced a reply: its tokens' logprobs at the training temperature under the weights that
    sampled each of them, and the policy version the call started under (its oldest)."""

    logprobs: list[float]
    version: int


@dataclass(eq=False)
class _Call:
    prompt_ids: list[int]
    sampling: Sampling
    future: asyncio.Future = field(repr=False)
    version: int | None = None
    """The policy version of its first segment (set when it starts decoding)."""
    response: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    behaviour: list[float] = field(default_factory=list)

    def segment_sampling(self, segment_tokens: int) -> Sampling:
        return dataclasses.replace(
            self.sampling, max_tokens=min(segment_tokens, self.sampling.max_tokens - len(self.response))
        )


class SegmentedChat:
    """A ``Chat`` whose calls are decoded by ``run_round`` (see the module docstring).

    ``before_round(starts_calls)`` runs at the start of every round that decodes anything; it may block (the
    staleness bound: producers wait), may load newer weights into ``model``, and returns the policy version of the
    weights the round decodes with; it runs under ``lock`` (a re-entrant lock or a ``Condition`` on one), together
    with the registration of the calls it starts. ``outstanding`` maps every call started and not yet handed out by
    ``behaviour`` (decoding, or answered and waiting for its sample) to its start version; it is changed only under
    ``lock`` (the learner reads it for the staleness bound).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        defaults: Sampling,
        segment_tokens: int,
        before_round: Callable[[bool], int],
        lock: threading.RLock | threading.Condition,
        name: str = "policy",
    ):
        if segment_tokens < 1:
            raise ValueError(f"rollout.segment_tokens must be at least 1, got {segment_tokens}")
        self.model, self.tokenizer, self.defaults, self.name = model, tokenizer, defaults, name
        self.segment_tokens = segment_tokens
        self.before_round, self.lock = before_round, lock
        self.outstanding: dict[int, int] = {}
        self.segments: list[int] = []
        """Calls decoded in each round (for tests and metrics)."""
        self._pending: list[_Call] = []
        self._carried: list[_Call] = []
        self._behaviour: dict[int, tuple[Reply, Behaviour, int]] = {}
        self._stop_ids = stop_token_ids(model, tokenizer)

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        settings = with_overrides(self.defaults, sampling)
        if settings.seed is not None:
            raise ValueError(
                "segment rollouts draw from the step's seeded torch generator; drop the call's seed"
            )
        if settings.temperature != self.defaults.temperature:
            raise ValueError(
                f"the learner scores tokens at rollout.temperature {self.defaults.temperature}; a call may not "
                f"sample at {settings.temperature}"
            )
        call = _Call(
            render_prompt(self.tokenizer, messages), settings, asyncio.get_running_loop().create_future()
        )
        self._pending.append(call)
        return await call.future

    def behaviour(self, reply: Reply) -> Behaviour:
        """The behaviour record of a reply this chat gave (handed out once: the call is then no longer
        outstanding)."""
        _, record, key = self._behaviour.pop(id(reply))
        with self.lock:
            self.outstanding.pop(key, None)
        return record

    @property
    def busy(self) -> bool:
        """Calls are waiting for a round or decoding."""
        return bool(self._pending or self._carried)

    async def run_round(self) -> bool:
        """Let the callers answered last round issue their next calls, then decode one segment of every call;
        False when there was nothing to decode."""
        for _ in range(SETTLE_TICKS):
            await asyncio.sleep(0)
        newcomers = [call for call in self._pending if not call.future.done()]
        self._pending = []
        if not newcomers and not self._carried:
            return False
        with self.lock:  # no step may slip between the freshness check and the calls' registration
            version = self.before_round(bool(newcomers))
            for call in newcomers:
                call.version = version
                self.outstanding[id(call)] = version
        calls, self._carried = self._carried + newcomers, []
        self.segments.append(len(calls))
        try:
            self._decode(calls)
        except Exception as err:  # every waiting call hears about the failure
            self._answer(calls, err)
            return True
        limit = context_length(self.model)
        goes_on = [self._continues(call, limit) for call in calls]
        self._carried = [call for call, more in zip(calls, goes_on, strict=True) if more]
        self._answer([call for call, more in zip(calls, goes_on, strict=True) if not more], None)
        return True

    def _continues(self, call: _Call, limit: int) -> bool:
        """The call used its whole segment without ending and has room left: it goes on next round."""
        total = len(call.response)
        return (
            not self._ended(call)
            and total % self.segment_tokens == 0
            and total < call.sampling.max_tokens
            and len(call.prompt_ids) + total < limit
        )

    def _ended(self, call: _Call) -> bool:
        """The call stopped on its own: an end-of-turn token or a stop string."""
        if call.response and call.response[-1] in self._stop_ids:
            return True
        text = self.tokenizer.decode(call.response, skip_special_tokens=True)
        return any(stop in text for stop in call.sampling.stop)

    def _decode(self, calls: list[_Call]) -> None:
        """One segment of each call, with its tokens' logprobs at the sampling temperature under these weights."""
        prompts = [call.prompt_ids + call.response for call in calls]
        settings = [call.segment_sampling(self.segment_tokens) for call in calls]
        completions = generate(self.model, self.tokenizer, prompts, settings, tempered_logprobs=True)
        for call, done in zip(calls, completions, strict=True):
            assert done.tempered_logprobs is not None
            call.response += done.response_ids
            call.logprobs += done.logprobs
            call.behaviour += done.tempered_logprobs

    def _answer(self, calls: list[_Call], error: Exception | None) -> None:
        for call in calls:
            if error is not None or call.future.done():  # failed, or its caller has gone: no sample will come
                with self.lock:
                    self.outstanding.pop(id(call), None)
                settle(call.future, error)
                continue
            reply = Reply(
                text=final_text(self.tokenizer, call.response, call.sampling.stop),
                finish_reason="stop" if self._ended(call) else "length",
                input_tokens=len(call.prompt_ids),
                output_tokens=len(call.response),
                model=self.name,
                prompt_ids=call.prompt_ids,
                response_ids=call.response,
                logprobs=call.logprobs,
            )
            assert call.version is not None
            self._behaviour[id(reply)] = (reply, Behaviour(call.behaviour, call.version), id(call))
            settle(call.future, reply)
