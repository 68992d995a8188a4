"""Roles served by a fixed model while the others train (``rollout.frozen_roles``).

MarsRL measures a trained Verifier/Corrector beside other Solvers (Table 3); training against a fixed external
Solver makes that generalisation a training target too, and MATPO's worker can be trained under a fixed planner the
same way. ``RoutedChat`` sends a frozen role's calls to its Inspect model (``local/…``, ``openai/…``,
``openai-api/<service>/…`` for an OpenAI-compatible endpoint) and every other role's to the policy. A frozen role's
calls come back as text, so the method still builds its rewarded rows (re-tokenised), and the scoring leaves those
rows out (``mara_bench.trainer.rollouts.scoring.trained_agent``): the policy never trains on another model's tokens,
and the frozen model is never updated.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mara_bench.core.episodes import Episode, Message, Reply
from mara_bench.harness.systems.inspect_adapter import InspectChat


class RoutedChat:
    """``Chat`` over the policy, with some roles answered by fixed models; counts the calls each one served."""

    def __init__(self, policy: Any, frozen: dict[str, str]) -> None:
        from inspect_ai.model import get_model

        self.policy = policy
        self.frozen = InspectChat({role: get_model(model) for role, model in frozen.items()}, spans=False)
        self.frozen_roles = frozenset(frozen)
        self.served: Counter[str] = Counter()
        """Calls each frozen role's model answered."""

    @property
    def tokenizer(self) -> Any:
        """The policy's tokenizer (systems count their budgets with it)."""
        return self.policy.tokenizer

    def watch(self, episode: Episode) -> None:
        if hasattr(self.policy, "watch"):
            self.policy.watch(episode)

    def take_served(self) -> dict[str, float]:
        """``frozen/<role>/calls`` since the last take, for the step's metrics (then reset)."""
        served = {f"frozen/{role}/calls": float(self.served[role]) for role in sorted(self.frozen_roles)}
        self.served.clear()
        return served

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        if role not in self.frozen_roles:
            return await self.policy(role, messages, **sampling)
        self.served[role] += 1
        return await self.frozen(role, messages, **_inspect_sampling(sampling))


def _inspect_sampling(sampling: dict[str, Any]) -> dict[str, Any]:
    """The sampling settings an Inspect model takes (the policy's own engine knobs are dropped)."""
    return {
        key: value for key, value in sampling.items() if key in ("temperature", "top_p", "max_tokens", "seed")
    }
