"""What a training method is, and the sample plumbing every method shares.

A method says how ONE question's group of episodes becomes rewarded samples (``rewarded_samples``), which advantage
estimator (``mara_bench.trainer.algorithms.estimators``) the recipe must choose for it (``estimator``), and -- when its
advantages are not the estimator's plain GRPO over ``group_key`` -- how it assigns them itself
(``advantages``, run per question after every reward is known to be finite; it may also change the set of
rows, as MARS's balanced sampling does). A method may also sample a question's episodes itself (``rollout``:
MarsRL's grouped agentic rollouts branch inside the V-C system) instead of the engine's ``rollout.group_size``
independent runs of the task's system.

Sample ``parent`` indices are local to the list a method returns; ``concatenate`` offsets them when the engine joins
the questions of a step.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mara_bench.core.episodes import Chat, Episode, ModelCall
from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.advantages import GroupNorm
from mara_bench.trainer.config import AlgorithmConfig, RolloutConfig, TaskConfig
from mara_bench.trainer.samples import sample_from_call

RewardedSamples = Callable[[dict[str, Any], list[Episode], Any, Any], list[Sample]]
"""``rewarded_samples(item, episodes, task, tokenizer) -> samples`` for one question and its group of episodes."""


Advantages = Callable[[list[Sample], GroupNorm], list[Sample]]
"""``advantages(samples, norm) -> samples`` for one question: sets every row's ``advantage`` (a scalar, or one
value per response token) and returns the rows to train on."""


GroupRollout = Callable[[dict[str, Any], Chat, random.Random], Awaitable[list[Episode]]]
"""``rollout(item, chat, rng) -> episodes``: one question's group of episodes, sampled with the policy's ``chat``;
``rng`` is the question's seeded generator for the method's own random choices."""


Ratio = tuple[float, float]
"""``(numerator, denominator)`` of a metric, summed over ranks before dividing (a 0 denominator reports
nothing)."""

MethodMetrics = Callable[[list[dict[str, Any]], list[list[Episode]]], dict[str, Ratio]]
"""``metrics(items, episodes) -> {name: (numerator, denominator)}`` over one step's questions and their groups."""


@dataclass(frozen=True)
class Method:
    """A registered training method (see the module docstring)."""

    name: str
    rewarded_samples: RewardedSamples
    estimator: str | None = None
    """The ``algorithm.advantage`` the method needs (``grpo`` or ``gae``); ``None`` accepts either."""
    advantages: Advantages | None = None
    """The method's own advantage assignment; ``None`` lets the engine run ``estimator`` on the samples."""
    rollout: Callable[[AlgorithmConfig, TaskConfig, RolloutConfig], GroupRollout | None] | None = None
    """The method's own rollout under the recipe's ``algorithm``, ``task`` and ``rollout`` sections (checked there:
    a bad combination is an error); ``None``, or ``None`` returned, lets the engine run ``rollout.group_size`` runs
    of ``task.system`` per question."""
    metrics: MethodMetrics | None = None
    """The method's own step metrics (MarsRL's verifier precision/recall and corrector fix rate)."""
    configure: Callable[[Method, AlgorithmConfig], Method] | None = None
    """The method as the recipe's ``algorithm`` section sets it (M-ASK's reward switch); ``None``: the method takes
    no settings."""

    def configured(self, algorithm: AlgorithmConfig) -> Method:
        """This method under the recipe's ``algorithm`` settings."""
        return self.configure(self, algorithm) if self.configure is not None else self


def question_id(item: dict[str, Any]) -> str:
    """The group key of a question: its id."""
    return str(item["id"])


def role_group(item: dict[str, Any], role: str) -> str:
    """The group key that normalises one agent role within one question: ``<id>/<role>``."""
    return f"{question_id(item)}/{role}"


def concatenate(groups: Sequence[list[Sample]]) -> list[Sample]:
    """Join per-question (or per-episode) sample lists into one; each list's local ``parent`` indices are offset
    in the joined rows (shallow copies: the lists passed in keep their own indices)."""
    joined: list[Sample] = []
    for group in groups:
        offset = len(joined)
        joined += [
            dataclasses.replace(s, parent=None if s.parent is None else s.parent + offset) for s in group
        ]
    return joined


def call_samples(
    tokenizer: Any, calls: list[ModelCall], rewards: dict[int, float], group_key: Callable[[ModelCall], str]
) -> list[Sample]:
    """One sample per call (for systems whose calls never continue one another: V-C, M-ASK), rewarded by call id.

    A call's ``parent`` becomes the index of its parent call's sample when that call is among ``calls``.
    """
    position = {call.id: index for index, call in enumerate(calls)}
    samples = []
    for call in calls:
        sample = sample_from_call(tokenizer, call, group_key=group_key(call), reward=rewards[call.id])
        sample.parent = position.get(call.parent) if call.parent is not None else None
        samples.append(sample)
    return samples


def lead_then_helpers(samples: list[Sample], lead: str, helper: str, system: str) -> list[Sample]:
    """An episode's one ``lead``-role sample (its whole conversation) first, then its ``helper``-role samples with
    ``parent`` 0 (the lead row); ``system`` names the harness system such an episode comes from, for the error."""
    leads = [s for s in samples if s.role == lead]
    if len(leads) != 1:
        raise ValueError(
            f"a {system} episode must give one {lead} sample (its conversation), got {len(leads)}: "
            f"is the episode from mara_bench.harness.systems.{system}?"
        )
    helpers = [s for s in samples if s.role == helper]
    for sample in helpers:
        sample.parent = 0
    return leads + helpers


def train_final_reply_only(sample: Sample) -> Sample:
    """Keep the loss on the call's own reply only: the trailing run of trained tokens.

    A prompt that replays another agent's output as an assistant turn (the V-C Corrector continues the Solver's
    conversation) would otherwise train that output under this call's reward.
    """
    trailing = len(sample.loss_mask)
    while trailing > 0 and sample.loss_mask[trailing - 1] == 1:
        trailing -= 1
    sample.loss_mask = [0] * trailing + sample.loss_mask[trailing:]
    return sample
