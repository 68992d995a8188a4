"""Roles a task scripts in every rollout: the task's ``scripted_skills`` (role -> skill) are played by the system's
demonstration policy (``mara_bench.trainer.demos``), every other role by the live policy.

The MarsRL learning toy scripts its Solver this way (``mara_bench.trainer.tasks.toy``: right part of the time), so the
Verifier always has right and wrong solutions to judge. A scripted role's rows are off-policy: a recipe leaves them
out of training (``algorithm.marsrl.train_agents``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from mara_bench.core.episodes import Chat, Message, Reply
from mara_bench.trainer.demos import ScriptedChat, demo_policy


@dataclass
class ScriptedRoles:
    """A ``Chat``: the ``scripted`` chat answers ``roles``, the ``policy`` chat every other role (and is what the
    systems' other attributes -- its tokenizer -- come from)."""

    policy: Chat
    scripted: Chat
    roles: frozenset[str]

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        chat = self.scripted if role in self.roles else self.policy
        return await chat(role, messages, **sampling)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)


def chat_for(task: Any, system: str, policy: Chat, item: dict[str, Any], tokenizer: Any) -> Chat:
    """The chat one question's rollout runs with: ``policy``, or ``ScriptedRoles`` when the task scripts roles
    (drawing each scripted reply from the episode's seed)."""
    skills = getattr(task, "scripted_skills", None)
    if not skills:
        return policy
    scripted = ScriptedChat(demo_policy(system), item, random.Random(str(item["id"])), tokenizer, skills)
    return ScriptedRoles(policy, scripted, frozenset(skills))
