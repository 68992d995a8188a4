"""Scripted demonstration policies for the cold start (``trainer.warmup``), one per harness system.

A demonstration policy plays every role of its system the way the system's parser expects (MARS tool calls with a
purpose, MarsRL verdicts, MATPO worker requests, M-ASK sub-queries, evidence and knowledge-state updates), reading
what it needs from the very messages the system sends, and errs on purpose part of the time (each module's skill odds; M-ASK's from ``warmup.mask``):
the fine-tuned model then keeps every role's outputs varied enough for group-relative advantages to be non-zero.

``ScriptedChat`` serves a policy as a harness ``Chat``, so demonstrations run through the real system code
(``harness.systems``) and give exactly the Episodes an RL rollout gives.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.systems.types import Message, Reply
from trainer.demos import mars, mask, matpo, vc
from trainer.episode_seeds import call_seed

if TYPE_CHECKING:
    from trainer.config import WarmupConfig

Policy = Callable[[str, list[Message], dict[str, Any], random.Random], str]
"""``policy(role, messages, item, rng) -> reply text`` for one model call of a system on ``item``."""


def fixed(policy: Policy) -> Callable[[WarmupConfig], Policy]:
    """A policy the recipe's ``warmup:`` section does not tune."""
    return lambda _warmup: policy


POLICIES: dict[str, Callable[[WarmupConfig], Policy]] = {
    "vc": fixed(vc.reply),
    "mars": fixed(mars.reply),
    "matpo": fixed(matpo.reply),
    "mask": mask.policy,
}
"""System -> its scripted policy, built from the recipe's ``warmup:`` section (M-ASK reads ``warmup.mask``)."""


def demo_policy(system: str, warmup: WarmupConfig) -> Policy:
    """The scripted policy of ``system``; a system without one is an error naming those that have one."""
    if system not in POLICIES:
        raise ValueError(
            f"warmup: no demonstration policy for task.system {system!r}; systems with one: "
            f"{', '.join(sorted(POLICIES))}"
        )
    return POLICIES[system](warmup)


@dataclass
class ScriptedChat:
    """A ``Chat`` whose replies come from a demonstration policy for one question (``item``).

    ``tokenizer`` is the policy model's, so systems that count tokens (MARS's System-1 bins) pack exactly as in
    the RL rollouts.
    """

    policy: Policy
    item: dict[str, Any]
    rng: random.Random
    tokenizer: Any = None

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:  # noqa: ARG002
        """The policy's reply, drawn from the episode's seed for this prompt when one is bound (so concurrent
        episodes script the same replies whatever order their calls arrive in), else from ``rng``."""
        seed = call_seed(json.dumps(messages, sort_keys=True))
        rng = self.rng if seed is None else random.Random(seed)
        return Reply(text=self.policy(role, messages, self.item, rng), model="scripted-demo")
