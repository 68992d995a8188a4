"""MarsRL's pipelined and segmented rollouts in the real trainer (arXiv:2511.11373 §3.3-3.4): rollout and training side by
side, with a bounded staleness. On under ``algorithm.marsrl.pipeline: true`` and/or ``rollout.segment_tokens: N``;
the ``Pipeline`` is then the run's ``SampleSource`` (``mara_bench.trainer.rollouts.sources``): ``Trainer.train_step``
trains on the batches it hands over.

* A rollout thread (its own event loop) runs the V-C chains of the questions with a SNAPSHOT of the policy
  (``mara_bench.trainer.rollouts.segments.SegmentedChat``: rounds of ``segment_tokens`` tokens, or whole calls),
  ``group_size`` chains per question, starting new questions while fewer than ``(max_staleness + 1) *
  prompts_per_step`` questions are untrained (producers wait).
  Under ``algorithm.marsrl.rollout: grouped`` a question is ONE grouped agentic rollout instead
  (``mara_bench.trainer.methods.marsrl_rollout``: a tree of agents, each sampling ``group_size`` outputs on 2 chosen outputs
  of the agent before it), run through the same chat, the choices judged on the rollout thread as it grows.
* Release. With ``pipeline``, a question's (question, agent) group -- the GRPO group of ``mara_bench.trainer.methods.marsrl``
  -- enters the training queue as soon as every chain of the question is past that agent (it issued a later
  agent's call, or ended): the Solvers' samples train while the Verifiers and Correctors still decode (grouped:
  an agent's groups enter when the next agent starts, since it starts only once they have all finished). Without
  it, the question's samples enter together when its last chain ends.
* The learner (the calling thread) trains each step on every released group once they hold at least
  ``prompts_per_step * group_size`` samples (fewer when nothing else is decoding), then publishes its weights; the
  sampler loads the newest ones at its next round.
* Bounded staleness. A sample's version is that of the weights that started it; trained at learner version ``v``
  its staleness is ``v - version``. The learner takes step ``v`` only when every sample still decoding or waiting
  for its group has a version ``>= v + 1 - max_staleness`` (else it waits for them), and the sampler starts a call
  only with weights of a version ``>= (the step being taken) - max_staleness`` (else it waits for them). So no
  sample is trained with a staleness above the bound; a step that would is an error, not a silent drop.
* Importance ratios use the BEHAVIOUR policy: each sample's ``old_logprobs`` are the sampler's own, recorded at
  the training temperature as each token was sampled, under the weights that sampled it (``PolicyUpdate(...,
  behaviour=True)``, asked for by the batch's ``behaviour``).

Metrics per step, beside the step's own (``staleness_mean`` / ``staleness_max``, ``samples``, ...):
``time_wait_learner`` (the learner waiting for samples) and ``time_wait_sampler`` (the sampler waiting for
capacity or newer weights since the last batch). Not deterministic
across runs (thread timing decides which groups share a step); a resumed run goes on from the data cursor, so the
questions that were in flight at the checkpoint are skipped; no rollout dumps (``rollouts/``); one process only.
"""

from __future__ import annotations

import asyncio
import copy
import random
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from mara_bench.core.episodes import Episode, Message, Reply
from mara_bench.core.samples import Sample
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.systems import run_system
from mara_bench.trainer.config import MarsRLConfig, RolloutConfig
from mara_bench.trainer.methods import concatenate
from mara_bench.trainer.methods.base import question_id
from mara_bench.trainer.methods.marsrl import AGENT_RANK, agent, call_samples_of, next_agent
from mara_bench.trainer.rollouts.pipeline_units import ChainCalls, Event, Origin, Unit
from mara_bench.trainer.rollouts.rollout import PromptOrder, Rollout
from mara_bench.trainer.rollouts.segments import SegmentedChat
from mara_bench.trainer.rollouts.sources import Batch

EVENTS_KEPT = 100_000

SWITCH_INTERVAL = 1e-4
"""Seconds between the interpreter's thread switches while a pipelined run goes on (Python's default is 5 ms): the
learner releases the GIL at every torch op, and with the default each op could wait 5 ms for the decoding thread
to hand it back."""


@dataclass(eq=False)
class _Question:
    item: dict[str, Any]
    chains: int
    episodes: list[Episode | None] = field(default_factory=list)
    done: list[bool] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    """The rank (``AGENT_RANK``) of the agent each chain is on now; -1 before its first call."""
    released: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.episodes = [None] * self.chains
        self.done = [False] * self.chains
        self.rank = [-1] * self.chains

    @property
    def qid(self) -> str:
        return question_id(self.item)


class _ChainTap:
    """The chat one chain sees: it watches the chain's episode and reports each call issued and answered."""

    def __init__(self, chat: SegmentedChat, question: _Question, chain: int, pipeline: Pipeline):
        self.chat, self.question, self.chain, self.pipeline = chat, question, chain, pipeline
        self.tokenizer = chat.tokenizer

    def watch(self, episode: Episode) -> None:
        self.question.episodes[self.chain] = episode

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        episode = self.question.episodes[self.chain]
        assert episode is not None
        self.pipeline._issued(self.question, self.chain, next_agent(episode, role))
        call = len(episode.calls)
        reply = await self.chat(role, messages, **sampling)
        self.pipeline._record(Event("answered", Origin(self.question.qid, self.chain, call), role))
        return reply


class Pipeline:
    """The learner side of a pipelined run (a ``SampleSource``), and the rollout thread it starts on its first
    batch: it samples with a snapshot of ``policy`` and takes its questions from ``prompts``."""

    def __init__(
        self,
        marsrl: MarsRLConfig,
        settings: RolloutConfig,
        seed: int,
        rollout: Rollout,
        policy: torch.nn.Module,
        tokenizer: Any,
        prompts: PromptOrder,
        world_size: int,
    ):
        if world_size > 1:
            raise ValueError("pipelined / segmented rollouts run in one process; drop torchrun")
        self.settings, self.seed = settings, seed
        """The recipe's ``rollout`` section and its seed (each question's own generator)."""
        self.rollout, self.prompts = rollout, prompts
        self.policy, self.tokenizer = policy, tokenizer
        self.staleness_bound = marsrl.max_staleness
        self.per_agent = marsrl.pipeline
        self.batch_target = settings.prompts_per_step * settings.group_size
        self.capacity = (self.staleness_bound + 1) * settings.prompts_per_step
        self.cond = threading.Condition()
        self.queue: list[Unit] = []
        self.finished: list[tuple[dict[str, Any], list[Episode]]] = []
        self.questions: list[_Question] = []
        self.open_questions = 0
        self.published: tuple[int, dict[str, torch.Tensor]] | None = None
        self.stepping_to = 0
        """The version the learner is producing (its version while it waits for samples)."""
        self.sampler_wait = 0.0
        self.events: deque[Event] = deque(maxlen=EVENTS_KEPT)
        """What happened, in order (the latest ``EVENTS_KEPT``; for tests and inspection)."""
        self.error: BaseException | None = None
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.chat: SegmentedChat | None = None

    # ---- learner ------------------------------------------------------------------------------------------

    def next_batch(self, version: int) -> Batch:
        """Every group released since the last batch (waiting for enough of them, ``_take``), with the
        sampler's behaviour logprobs; starts the rollout thread on the first call."""
        if self.thread is None:
            self._start(version)
        started = time.perf_counter()
        units, finished = self._take(version)
        taken = time.perf_counter()
        groups = [self._samples(unit, version) for unit in units]
        with self.cond:
            sampler_wait, self.sampler_wait = self.sampler_wait, 0.0
        return Batch(
            items=[item for item, _ in finished],
            episodes=[chains for _, chains in finished],
            unscored=[0] * len(finished),
            groups=groups,
            started=started,
            ready=taken,
            metrics={"time_wait_learner": taken - started, "time_wait_sampler": sampler_wait},
            behaviour=True,
            staleness_bound=self.staleness_bound,
            per_question=False,
        )

    def updated(self, version: int) -> None:
        """Publish the learner's weights of ``version`` to the sampler."""
        self._publish(version)

    def _take(self, version: int) -> tuple[list[Unit], list[tuple[dict[str, Any], list[Episode]]]]:
        """Wait until the queue holds a batch and no sample still to come would be too stale after this step."""
        with self.cond:
            while True:
                if self.error is not None:
                    raise RuntimeError("the rollout thread failed") from self.error
                self._drop_empty_units()
                ready = sum(unit.size for unit in self.queue)
                pending = self.chat.outstanding.values() if self.chat is not None else ()
                fresh = min(pending, default=version + 1) >= version + 1 - self.staleness_bound
                if ready and fresh and (ready >= self.batch_target or not pending):
                    break
                self.cond.wait(timeout=1.0)
            units, self.queue = self.queue, []
            finished, self.finished = self.finished, []
            self.open_questions -= sum(unit.last for unit in units)
            self.stepping_to = version + 1
            self.cond.notify_all()
        return units, finished

    def _drop_empty_units(self) -> None:
        """A question's final release with no samples left frees its capacity at once (under ``cond``)."""
        empty = [unit for unit in self.queue if not unit.size]
        if empty:
            self.queue = [unit for unit in self.queue if unit.size]
            self.open_questions -= sum(unit.last for unit in empty)
            self.cond.notify_all()

    def _publish(self, version: int) -> None:
        weights = {name: p.detach().clone() for name, p in self.policy.named_parameters()}
        with self.cond:
            self.published = (version, weights)
            self.cond.notify_all()

    def close(self) -> None:
        """Stop the rollout thread (the calls it was decoding are dropped)."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self.thread is not None:
            self.thread.join()
            sys.setswitchinterval(self.switch_interval)

    # ---- rollout thread -----------------------------------------------------------------------------------

    def _start(self, version: int) -> None:
        rollout = self.settings
        model = copy.deepcopy(self.policy).eval().requires_grad_(False)
        self.sampler_version = version
        self.stepping_to = version
        self.model = model
        self.chat = SegmentedChat(
            model,
            copy.deepcopy(self.tokenizer),  # its own: the learner's thread tokenizes the samples
            defaults=Sampling(
                max_tokens=rollout.max_tokens, temperature=rollout.temperature, top_p=rollout.top_p
            ),
            segment_tokens=rollout.segment_tokens or rollout.max_tokens,
            before_round=self._before_round,
            lock=self.cond,  # type: ignore[arg-type]  # a Condition is a lock
        )
        self.sampler_threads = 1
        self.switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.thread = threading.Thread(target=self._run, name="mara-rollout", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        torch.set_num_threads(self.sampler_threads)  # OpenMP's thread count is per thread: set it here too
        try:
            asyncio.run(self._roll())
        except BaseException as err:  # the learner raises it at its next wait
            with self.cond:
                self.error = err
                self.cond.notify_all()

    async def _roll(self) -> None:
        chat = self.chat
        assert chat is not None
        tasks: set[asyncio.Task] = set()
        while not self.stopping:
            for task in [t for t in tasks if t.done()]:
                tasks.discard(task)
                task.result()  # a failed chain fails the run
            self._launch(tasks)
            if await chat.run_round():
                continue
            if not chat.busy:  # nothing to decode: wait for the learner to free capacity
                waited = time.perf_counter()
                with self.cond:
                    if not self.stopping and self.open_questions >= self.capacity:
                        self.cond.wait(timeout=1.0)
                    self.sampler_wait += time.perf_counter() - waited
        for task in tasks:
            task.cancel()

    def _launch(self, tasks: set[asyncio.Task]) -> None:
        """Start new questions while fewer than ``capacity`` are untrained."""
        while True:
            with self.cond:
                if self.stopping or self.open_questions >= self.capacity:
                    return
                self.open_questions += 1
                [index] = self.prompts.take(1)
                chains = 1 if self.rollout.own_rollout is not None else self.settings.group_size
                question = _Question(self.rollout.task.items[index], chains)
                self.questions.append(question)
            tasks.add(asyncio.ensure_future(self._question(question)))

    async def _question(self, question: _Question) -> None:
        rollout = self.rollout

        async def chain(index: int) -> list[Episode]:
            tap = _ChainTap(self.chat, question, index, self)  # type: ignore[arg-type]
            if rollout.own_rollout is not None:  # one grouped tree: its own generator per question
                rng = random.Random(f"{self.seed}/{question.qid}")
                episodes = await rollout.own_rollout(question.item, tap, rng)  # type: ignore[arg-type]
            else:
                user, options = rollout.run_input(question.item)
                episodes = [await run_system(rollout.system.name, user, tap, rollout.toolbox, **options)]
            question.done[index] = True
            self._release(question)
            return episodes

        chains = await asyncio.gather(*[chain(index) for index in range(question.chains)])
        episodes = [episode for made in chains for episode in made]
        with self.cond:
            self.finished.append((question.item, list(episodes)))
            self.questions.remove(question)
            self.cond.notify_all()

    def _before_round(self, starts_calls: bool) -> int:
        """Load the newest published weights; before starting calls, wait for weights fresh enough for the step
        the learner is taking. Returns the version the round decodes with."""
        waited = time.perf_counter()
        with self.cond:  # held by the chat across the check and the registration of the calls it starts
            while starts_calls and not self.stopping and self._fresher_needed():
                self.cond.wait(timeout=1.0)
            self.sampler_wait += time.perf_counter() - waited
            if self.published is not None and self.published[0] > self.sampler_version:
                version, weights = self.published
                with torch.no_grad():
                    for name, parameter in self.model.named_parameters():
                        parameter.copy_(weights[name])
                self.sampler_version = version
            return self.sampler_version

    def _fresher_needed(self) -> bool:
        newest = self.published[0] if self.published is not None else self.sampler_version
        return newest < self.stepping_to - self.staleness_bound

    def _issued(self, question: _Question, chain: int, agent_name: str) -> None:
        """A chain issued a call of ``agent_name``: the agents before it are behind that chain."""
        question.rank[chain] = AGENT_RANK[agent_name]
        self._release(question)

    def _release(self, question: _Question) -> None:
        """Queue the groups every chain of the question is past (all of them once every chain ended)."""
        last = all(question.done)
        closed = [
            name
            for name, rank in AGENT_RANK.items()
            if name not in question.released and (last or (self.per_agent and self._past(question, rank)))
        ]
        if not closed and not last:
            return
        assert self.chat is not None
        released: list[ChainCalls] = []
        with self.cond:  # the calls leave ``outstanding`` and join the queue at once
            for chain, episode in enumerate(question.episodes):
                if episode is None:
                    continue
                snapshot = Episode(
                    episode.system, episode.question, calls=list(episode.calls), meta=dict(episode.meta)
                )
                calls = [c for c in snapshot.calls if agent(c, snapshot) in closed]
                if calls:
                    behaviours = [self.chat.behaviour(call.reply) for call in calls]
                    released.append(ChainCalls(chain, snapshot, calls, behaviours))
            question.released.update(closed)
            if released or last:
                self.queue.append(Unit(question.item, released, last))
                self.cond.notify_all()

    @staticmethod
    def _past(question: _Question, rank: int) -> bool:
        """Every chain of the question ended or is on an agent of a higher rank."""
        return all(done or now > rank for done, now in zip(question.done, question.rank, strict=True))

    def _samples(self, unit: Unit, version: int) -> list[Sample]:
        """A unit's samples, with the sampler's behaviour logprobs on their replies and their start versions
        (``trained`` events recorded)."""
        per_chain: list[list[Sample]] = []
        for chain in unit.chains:
            made = call_samples_of(unit.item, chain.episode, self.tokenizer, chain.calls)
            for call, sample, behaviour in zip(chain.calls, made, chain.behaviours, strict=True):
                reply = call.reply.response_ids or []
                if sample.response_ids[len(sample.response_ids) - len(reply) :] != reply:
                    raise RuntimeError(f"call {call.id}'s sample does not end with its reply's tokens")
                sample.old_logprobs = [0.0] * (len(sample.response_ids) - len(reply)) + behaviour.logprobs
                sample.policy_version = behaviour.version
                self._record(
                    Event("trained", Origin(question_id(unit.item), chain.chain, call.id), call.role, version)
                )
            per_chain.append(made)
        return concatenate(per_chain)

    def _record(self, event: Event) -> None:
        with self.cond:
            self.events.append(event)
