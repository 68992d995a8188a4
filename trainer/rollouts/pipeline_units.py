"""What a pipelined MarsRL run passes between its rollout thread and its learner
(``mara_bench.trainer.rollouts.pipelined``): where a sample comes from, the ordered events a run records, and the
finished calls released to training together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mara_bench.core.episodes import Episode, ModelCall
from mara_bench.trainer.rollouts.segments import Behaviour


@dataclass(frozen=True)
class Origin:
    """Where a sample comes from: a question, one of its chains, a call of that chain."""

    question: str
    chain: int
    call: int


@dataclass(frozen=True)
class Event:
    """One thing that happened, in order: a call ``answered`` by the sampler, or a sample ``trained`` in a step."""

    kind: Literal["answered", "trained"]
    origin: Origin
    role: str
    step: int | None = None


@dataclass(frozen=True)
class ChainCalls:
    """Finished calls of one chain released together, with a snapshot of the chain's episode up to them and how
    the sampler produced each call."""

    chain: int
    episode: Episode
    calls: list[ModelCall]
    behaviours: list[Behaviour]


@dataclass
class Unit:
    """Whole GRPO groups of one question released to the learner; ``last`` is the question's final release.
    The learner makes their samples (rewards are judged on the learner's thread: ``math_verify`` times out with
    signals, which only the main thread has)."""

    item: dict[str, Any]
    chains: list[ChainCalls]
    last: bool

    @property
    def size(self) -> int:
        return sum(len(chain.calls) for chain in self.chains)
