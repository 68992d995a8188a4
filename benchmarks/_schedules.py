"""MarsRL's throughput schedules (arXiv:2511.11373 §3.3-3.4) as a deterministic discrete-event model of rollout + training.

The real trainer runs the pipelined and segmented schedules (``mara_bench.trainer.rollouts.pipelined``); this model
predicts them at the paper's scale, on a simulated long-tail workload (``benchmarks/bench_schedules.py``).

A workload is a list of chains (one per trajectory), each the decode lengths of its agents' calls in order
(Solver, Verifier, Corrector, ...). Decoding is one token per tick per call; training takes
``train_ticks_per_sample`` per sample and runs beside rollout. Four schedules, chosen as in a recipe:

* synchronous S→V→C (``pipeline=False``, no segments): ``width`` chains per wave; each agent stage starts when the
  whole previous stage finished, and the wave's samples train as one step when the wave ends -- every stage waits
  for its longest call (the long tail). With ``max_staleness >= 1`` the next wave decodes while the last trains.
* segment rollouts (``segment_tokens=N``): decoding runs in rounds of ``N`` tokens; what finished in a round goes on
  at the round's end, unfinished calls carry over to the next round, freed room is refilled with new work.
* agentic pipeline parallelism (``pipeline=True``): an agent's sample enters the training queue as soon as that
  agent finishes and the chain's next agent starts at once; new chains keep ``width`` in flight.
  Without pipelining a chain's samples go to training together when its last agent finishes.

Bounded staleness: a sample started under policy version ``s`` and trained in step ``v`` has staleness ``v - s``.
Streaming schedules train ``batch_size`` samples per step (fewer when nothing else runs), oldest first; the
trainer never takes step ``v`` while a sample left behind has ``s < v + 1 - max_staleness`` and still runs (it
waits for it), and a new chain starts only while every sample not yet trained -- queued, running, or still to come
from the started chains -- fits in ``max_staleness + 1`` steps. A synchronous wave starts only while fewer than
``max_staleness + 1`` waves are untrained. ``simulate`` returns the ticks, samples trained and staleness seen.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from mara_bench.trainer.config import TrainConfig


@dataclass(frozen=True)
class Schedule:
    """One rollout/training schedule (recipe: ``algorithm.marsrl.pipeline``, ``.max_staleness``,
    ``rollout.segment_tokens``)."""

    pipeline: bool = False
    segment_tokens: int | None = None
    max_staleness: int = 1
    width: int = 64
    """Chains decoding at once (the rollout batch)."""
    batch_size: int = 64
    """Samples per training step of the streaming schedules (a synchronous step trains its whole wave)."""
    train_ticks_per_sample: float = 1.0
    """Ticks of training per sample."""

    def __post_init__(self) -> None:
        if self.segment_tokens is not None and self.segment_tokens < 1:
            raise ValueError(f"rollout.segment_tokens must be at least 1, got {self.segment_tokens}")
        if self.max_staleness < 0:
            raise ValueError(f"algorithm.marsrl.max_staleness must be >= 0, got {self.max_staleness}")
        if min(self.width, self.batch_size) < 1 or self.train_ticks_per_sample < 0:
            raise ValueError("width and batch_size must be at least 1, train_ticks_per_sample at least 0")

    @property
    def synchronous(self) -> bool:
        return not self.pipeline and self.segment_tokens is None


@dataclass
class Report:
    ticks: float
    samples: int
    max_staleness: int
    mean_staleness: float
    train_steps: int

    @property
    def throughput(self) -> float:
        """Samples trained per tick."""
        return self.samples / self.ticks if self.ticks else 0.0


@dataclass(order=True)
class _Call:
    finish: float
    chain: int = field(compare=False)
    agent: int = field(compare=False)
    started_version: int = field(compare=False)


def schedule_from_config(
    config: TrainConfig, *, agents: int = 3, train_ticks_per_sample: float = 1.0
) -> Schedule:
    """The schedule a recipe asks for: ``prompts_per_step x group_size`` chains in flight, the same samples per step
    (``agents`` per chain)."""
    chains = config.rollout.prompts_per_step * config.rollout.group_size
    return Schedule(
        pipeline=config.algorithm.marsrl.pipeline,
        segment_tokens=config.rollout.segment_tokens,
        max_staleness=config.algorithm.marsrl.max_staleness,
        width=chains,
        batch_size=chains * agents,
        train_ticks_per_sample=train_ticks_per_sample,
    )


def long_tail_chains(
    n: int, agents: int = 3, *, median: int = 2000, sigma: float = 1.0, cap: int = 65536, seed: int = 0
) -> list[list[int]]:
    """``n`` chains of ``agents`` decode lengths drawn from a log-normal (median ``median``, shape ``sigma``,
    capped at ``cap``): most calls are short, a few run to the cap -- the long tail of reasoning models."""
    rng = random.Random(seed)
    mu = math.log(median)
    return [[min(cap, max(1, round(rng.lognormvariate(mu, sigma)))) for _ in range(agents)] for _ in range(n)]


def simulate(chains: Sequence[Sequence[int]], schedule: Schedule) -> Report:
    """Run ``chains`` through ``schedule`` until every sample is trained."""
    return _Simulation(chains, schedule).run()


class _Simulation:
    def __init__(self, chains: Sequence[Sequence[int]], schedule: Schedule):
        if not chains or any(not chain or min(chain) < 1 for chain in chains):
            raise ValueError("every chain needs at least one call of at least one token")
        self.chains, self.s = [list(c) for c in chains], schedule
        self.now: float = 0
        self.version = 0
        self.waiting = deque(range(len(chains)))  # chains not started
        self.ready: deque[tuple[int, int]] = deque()  # (chain, agent) calls that may start
        self.running: list[_Call] = []  # heap by finish time
        self.held: dict[int, list[int]] = {}  # chain -> started versions of its finished, unreleased samples
        self.queue: list[int] = []  # heap of started versions of samples awaiting training
        self.untrained_waves = 0
        self.trainer_free_at: float = 0
        self.staleness: list[int] = []
        self.total = sum(len(chain) for chain in chains)

    # -- rollout -------------------------------------------------------------------------------------------
    def _start_calls(self) -> None:
        if self.s.synchronous:
            self._start_wave()
            return
        while self.ready:  # a started chain always goes on
            self._launch(*self.ready.popleft())
        while self.waiting and self._committed() + len(self.chains[self.waiting[0]]) <= self._capacity():
            if len(self._active_chains()) >= self.s.width:
                return
            self._launch(self.waiting.popleft(), 0)

    def _capacity(self) -> int:
        return max((self.s.max_staleness + 1) * self.s.batch_size, max(len(c) for c in self.chains))

    def _active_chains(self) -> set[int]:
        return {c.chain for c in self.running} | {chain for chain, _ in self.ready} | set(self.held)

    def _committed(self) -> int:
        """Samples not trained yet: queued, held, running, and the calls still to come of every started chain."""
        to_come = sum(len(self.chains[c.chain]) - c.agent - 1 for c in self.running)
        return len(self.queue) + sum(len(v) for v in self.held.values()) + len(self.running) + to_come

    def _start_wave(self) -> None:
        """The next agent stage of the wave once nothing runs; a new wave once the last one is released."""
        if self.running:
            return
        if not self.ready:
            if self.held or not self.waiting or self.untrained_waves > self.s.max_staleness:
                return
            wave = [self.waiting.popleft() for _ in range(min(self.s.width, len(self.waiting)))]
            self.ready.extend((chain, 0) for chain in wave)
            self.untrained_waves += 1
        while self.ready:
            self._launch(*self.ready.popleft())

    def _launch(self, chain: int, agent: int) -> None:
        segment = self.s.segment_tokens
        if segment is None:
            finish = self.now + self.chains[chain][agent]
        else:  # a call joins at a round's start; its result is handed on at the end of the round it finishes in
            start = math.ceil(self.now / segment) * segment
            finish = math.ceil((start + self.chains[chain][agent]) / segment) * segment
        heapq.heappush(self.running, _Call(finish, chain, agent, self.version))

    def _finish(self, call: _Call) -> None:
        last = call.agent + 1 == len(self.chains[call.chain])
        if self.s.pipeline:
            heapq.heappush(self.queue, call.started_version)
        else:
            self.held.setdefault(call.chain, []).append(call.started_version)
            if last and not self.s.synchronous:
                self._release(call.chain)
        if not last:
            self.ready.append((call.chain, call.agent + 1))
        if self.s.synchronous and not self.running and not self.ready:
            for chain in list(self.held):
                self._release(chain)

    def _release(self, chain: int) -> None:
        for version in self.held.pop(chain):
            heapq.heappush(self.queue, version)

    # -- training ------------------------------------------------------------------------------------------
    def _maybe_train(self) -> None:
        if self.trainer_free_at > self.now or not self.queue:
            return
        if self.s.synchronous:
            batch = [heapq.heappop(self.queue) for _ in range(len(self.queue))]
            self.untrained_waves -= 1
        else:
            short = len(self.queue) < self.s.batch_size
            if short and self.running:  # a short step only when rollout is waiting on the trainer
                return
            batch = [heapq.heappop(self.queue) for _ in range(min(self.s.batch_size, len(self.queue)))]
            held = (version for versions in self.held.values() for version in versions)
            left = [*self.queue, *(c.started_version for c in self.running), *held]
            if left and min(left) < self.version + 1 - self.s.max_staleness and self.running:
                for version in batch:  # training now would leave a sample too stale: wait for it
                    heapq.heappush(self.queue, version)
                return
        self.staleness.extend(self.version - version for version in batch)
        self.version += 1
        self.trainer_free_at = self.now + len(batch) * self.s.train_ticks_per_sample

    # -- main loop -----------------------------------------------------------------------------------------
    def run(self) -> Report:
        while len(self.staleness) < self.total:
            self._start_calls()
            self._maybe_train()
            self._start_calls()
            events = [self.running[0].finish] if self.running else []
            if self.trainer_free_at > self.now:
                events.append(self.trainer_free_at)
            if not events:
                raise RuntimeError("schedule stalled: nothing running and nothing trainable")
            self.now = min(events)
            while self.running and self.running[0].finish <= self.now:
                self._finish(heapq.heappop(self.running))
        return Report(
            ticks=self.now,
            samples=len(self.staleness),
            max_staleness=max(self.staleness),
            mean_staleness=sum(self.staleness) / len(self.staleness),
            train_steps=self.version,
        )
