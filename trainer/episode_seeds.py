"""Sampling seeds that make a rollout independent of the order in which concurrent calls reach the policy.

An episode's agents call the policy concurrently (MARS's System-1 bins, M-ASK's agents, a GRPO group), and a call
may wait on a tool that runs in a thread (BM25 search, page reads), so which calls are batched together -- and in
what order unseeded rows draw from torch's global generator -- follows thread timing. ``EpisodeSeeds`` gives each
call of an episode its own seed instead, derived from the episode's seed, the call's prompt token ids and how many
times the episode has sent that prompt before: the same episode seed gives the same draws whatever the machine's
load. ``Rollout`` binds one per episode with ``bind_episode_seed`` (the seed drawn, in order, from the step's
seeded RNG), and ``PolicyChat`` asks ``call_seed`` for every call that names no seed itself; the cold start's
scripted demonstrations (``mara_bench.trainer.run.warmup``) draw each reply from the same kind of per-call seed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

SEED_BITS = 63
"""Seeds are non-negative 63-bit integers (``torch.Generator.manual_seed`` and vLLM accept them)."""


@dataclass
class EpisodeSeeds:
    """One episode's seed and how many times each prompt has been sent in it."""

    seed: int
    sent: Counter[bytes] = field(default_factory=Counter)

    def for_prompt(self, prompt_ids: Sequence[int] | str) -> int:
        """The seed of the next call with ``prompt_ids`` (token ids, or the prompt's text for a chat that has no
        tokens): a hash of (episode seed, prompt, occurrence)."""
        if isinstance(prompt_ids, str):
            prompt = prompt_ids.encode()
        else:
            prompt = b",".join(str(token).encode() for token in prompt_ids)
        occurrence = self.sent[prompt]
        self.sent[prompt] += 1
        digest = hashlib.blake2b(f"{self.seed}:{occurrence}:".encode() + prompt, digest_size=8).digest()
        return int.from_bytes(digest, "big") >> (64 - SEED_BITS)


_CURRENT: ContextVar[EpisodeSeeds | None] = ContextVar("mara_episode_seeds", default=None)


def bind_episode_seed(seed: int) -> None:
    """Seed the calls of the episode running in the current asyncio task (and the tasks it starts)."""
    _CURRENT.set(EpisodeSeeds(seed))


def call_seed(prompt_ids: Sequence[int] | str) -> int | None:
    """The current episode's seed for a call with ``prompt_ids``; ``None`` outside a seeded episode."""
    seeds = _CURRENT.get()
    return None if seeds is None else seeds.for_prompt(prompt_ids)
