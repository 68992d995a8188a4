"""Scripted demonstration policies for the cold start (``mara_bench.trainer.run.warmup``), one per harness system.

A demonstration policy plays every role of its system the way the system's parser expects (MARS tool calls with a
purpose, MarsRL verdicts, MATPO worker requests, M-ASK sub-queries, evidence and knowledge-state updates), reading
what it needs from the very messages the system sends, and errs on purpose part of the time (its ``skills``: per
role, the probability its decision is right; a recipe's ``warmup.demo_skills`` overrides the defaults): the
fine-tuned model then keeps every role's outputs varied enough for group-relative advantages to be non-zero.

``ScriptedChat`` serves a policy as a harness ``Chat``, so demonstrations run through the real system code
(``mara_bench.harness.systems``) and give exactly the Episodes an RL rollout gives.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from mara_bench.core.episodes import Message
from mara_bench.core.episodes import Reply as ModelReply
from mara_bench.core.named import lookup
from mara_bench.trainer.demos import mars, mask, matpo, vc
from mara_bench.trainer.episode_seeds import call_seed
from mara_bench.trainer.registry import DEMO_POLICIES

Skills = Mapping[str, float]
"""Role -> probability that the scripted decision of that role is right."""

Reply = Callable[[str, list[Message], dict[str, Any], random.Random, Skills], str]
"""``reply(role, messages, item, rng, skills) -> reply text`` for one model call of a system on ``item``."""


@dataclass(frozen=True)
class DemoPolicy:
    """A system's scripted reply function and its default skills; ``worked``, where the policy has one, is its
    reply showing the working behind each decision of the ``worked_roles`` (``warmup.demo_work``)."""

    reply: Reply
    skills: Skills
    worked: Reply | None = None
    worked_roles: frozenset[str] = frozenset()


VC = DemoPolicy(vc.reply, vc.SKILLS, vc.worked_reply, vc.WORKED_ROLES)
MARS = DemoPolicy(mars.reply, mars.SKILLS)
MATPO = DemoPolicy(matpo.reply, matpo.SKILLS)
MASK = DemoPolicy(mask.reply, mask.SKILLS)
"""The systems' policies, registered by name in ``mara_bench.trainer.registry.DEMO_POLICIES``."""


def demo_policy(system: str) -> DemoPolicy:
    """The scripted policy of ``system`` (``mara_bench.trainer.registry.DEMO_POLICIES``); a system without one is
    ``mara_bench.core.named``'s one-line error naming those that have one."""
    return lookup(DEMO_POLICIES, system, "demonstration policy").load()


@dataclass
class ScriptedChat:
    """A ``Chat`` whose replies come from a demonstration policy for one question (``item``).

    ``tokenizer`` is the policy model's, so systems that count tokens (MARS's System-1 bins) pack exactly as in
    the RL rollouts; ``skills`` override the policy's defaults role by role; ``show_work`` names the roles
    that reply with the policy's ``worked`` form.
    """

    policy: DemoPolicy
    item: dict[str, Any]
    rng: random.Random
    tokenizer: Any = None
    skills: Skills = field(default_factory=dict)
    show_work: Collection[str] = ()

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> ModelReply:  # noqa: ARG002
        """The policy's reply, drawn from the episode's seed for this prompt when one is bound (so concurrent
        episodes script the same replies whatever order their calls arrive in), else from ``rng``."""
        seed = call_seed(json.dumps(messages, sort_keys=True))
        rng = self.rng if seed is None else random.Random(seed)
        skills = {**self.policy.skills, **self.skills}
        worked = self.policy.worked if role in self.show_work and role in self.policy.worked_roles else None
        reply = worked or self.policy.reply
        return ModelReply(text=reply(role, messages, self.item, rng, skills), model="scripted-demo")
