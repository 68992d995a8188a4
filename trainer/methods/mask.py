"""M-ASK (arXiv:2601.04703 §3.3, appendix F algorithm 1): turn-level rewards for ``mara_bench.harness.systems.mask``, trained by
independent PPO with one shared critic (the engine's GAE path; the paper's code uses gamma = lambda = 1).

Every agent call is one transition of the replay buffer (algorithm 1, lines 9, 16, 29-32) and one sample, rewarded
on its last token:

* Plan: ``F1(a_0, y)`` (eq. 2); Answer at turn t: ``F1(a_t, y)`` (eq. 2) -- the Answer agent runs every turn at
  train time, so the system must run with ``answer_every_turn: true``;
* Search, Summary, Update of turn t: the shared gain ``F1(a_t, y) - F1(a_{t-1}, y)`` (eq. 3);
* a Search call that ends the loop (``<end>``, or a reply with neither tag) earns 0 (line 16).

``algorithm.mask.format_penalty: true`` adds what M-ASK's released training code adds (``format_penalty``): -1 to
every call whose reply breaks its role's strict format, on top of its F1 or ΔF1.

``algorithm.mask.reward: trajectory`` is the paper's ablation of the turn-level design: every call of the
episode is rewarded with the F1 of the trajectory's final answer (``trajectory_rewards``).

F1 is ``mara_bench.judges.lexical`` under M-ASK's own variant (``"mask"``); a yes/no item that variant leaves out of the F1
average is rewarded by its exact match, which is the token F1 of a one-word answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from mara_bench.core.episodes import Episode, ModelCall
from mara_bench.core.samples import Sample
from mara_bench.harness.systems.mask import ANSWER, PLAN, SEARCH
from mara_bench.harness.systems.outcomes import FormatCheck, IntermediateAnswer, SearchOutcome
from mara_bench.judges.lexical import score
from mara_bench.trainer.config import AlgorithmConfig
from mara_bench.trainer.methods.base import (
    Method,
    Ratio,
    RewardedSamples,
    call_samples,
    concatenate,
    question_id,
)

END_REWARD = 0.0
"""Algorithm 1, line 16: the Search agent's ``<end>`` transition."""
FORMAT_PENALTY = -1.0
"""M-ASK's released training code (``RayPPOTrainer.async_rollout_single``, ``verl/trainer/ppo/ray_trainer.py``,
chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b, lines 1306, 1453, 1477-1479):
``0.0 if is_legal_format else -1.0``, added to the reward of every Plan, Answer, Search, Summary and Update call of
a turn."""

Rewards = Callable[[Episode, Any], dict[int, float]]
"""``rewards(episode, golds) -> {call id: reward}``."""


def f1_reward(answer: str | None, golds: str | list[str]) -> float:
    """F1 of ``answer`` against the golds (M-ASK variant); exact match where that variant excludes F1."""
    scores = score(answer or "", golds, variant="mask")
    return scores["f1"] if scores["f1"] is not None else scores["em"]


def turn_rewards(episode: Episode, golds: str | list[str]) -> dict[int, float]:
    """Call id -> reward for every call of an M-ASK episode (eq. 2-3, algorithm 1)."""
    entries = [IntermediateAnswer.of(entry) for entry in episode.intermediate_answers]
    answered = {entry.call: entry.answer for entry in entries}
    turn_f1 = {entry.turn: f1_reward(entry.answer, golds) for entry in entries}
    rewards: dict[int, float] = {}
    for call in episode.calls:
        if call.role in (PLAN, ANSWER):  # eq. 2; an Answer call after the loop answers the final answer
            rewards[call.id] = f1_reward(answered.get(call.id, episode.final_answer), golds)
        elif call.role == SEARCH and SearchOutcome.of(call.meta).action != "search":
            rewards[call.id] = END_REWARD
        elif call.turn in turn_f1 and call.turn - 1 in turn_f1:  # eq. 3, shared by search, summary, update
            rewards[call.id] = turn_f1[call.turn] - turn_f1[call.turn - 1]
        else:
            raise ValueError(
                f"M-ASK episode has no answer for turn {call.turn} (or {call.turn - 1}) to reward its {call.role} "
                "call: run the mask system with system_options answer_every_turn: true when training"
            )
    return rewards


def trajectory_rewards(episode: Episode, golds: str | list[str]) -> dict[int, float]:
    """Call id -> the trajectory-level reward of the ablation: the final answer's F1 for every call."""
    final = f1_reward(episode.final_answer, golds)
    return {call.id: final for call in episode.calls}


def format_penalty(call: ModelCall) -> float:
    """The released code's penalty of one call: ``FORMAT_PENALTY`` for a reply outside its role's strict format,
    else 0. A Search call that ends the loop with ``<end>`` is never penalised (the released code rewards it 0
    whatever its format); one with neither tag searches on a fallback query cut from the reply, as the released
    code does, and is penalised."""
    if call.role == SEARCH and SearchOutcome.of(call.meta).action == "end":
        return 0.0
    return 0.0 if FormatCheck.of(call.meta).legal_format else FORMAT_PENALTY


def penalised(rewards: Rewards) -> Rewards:
    """``rewards`` with each call's ``format_penalty`` added (the released code's ``whole = reward + penalty``)."""

    def with_penalty(episode: Episode, golds: Any) -> dict[int, float]:
        earned = rewards(episode, golds)
        return {call.id: earned[call.id] + format_penalty(call) for call in episode.calls}

    return with_penalty


def samples_under(rewards: Rewards) -> RewardedSamples:
    """``rewarded_samples`` with per-call ``rewards(episode, golds)``; the task is unused (F1 against the golds)."""

    def rewarded_samples(
        item: dict[str, Any], episodes: list[Episode], task: Any, tokenizer: Any
    ) -> list[Sample]:
        return concatenate(
            [
                call_samples(
                    tokenizer, episode.calls, rewards(episode, item["answer"]), lambda _: question_id(item)
                )
                for episode in episodes
            ]
        )

    return rewarded_samples


def configure(method: Method, algorithm: AlgorithmConfig) -> Method:
    """The turn-level method, or the trajectory-level ablation under ``algorithm.mask.reward: trajectory``; either
    with the released code's format penalty under ``algorithm.mask.format_penalty``."""
    switches = algorithm.mask
    if switches.reward == "turn" and not switches.format_penalty:
        return method
    rewards = trajectory_rewards if switches.reward == "trajectory" else turn_rewards
    if switches.format_penalty:
        rewards = penalised(rewards)
    return dataclasses.replace(method, rewarded_samples=samples_under(rewards))


def step_metrics(items: list[dict[str, Any]], groups: list[list[Episode]]) -> dict[str, Ratio]:
    """``mask/final_answer_f1``: the mean F1 of the episodes' final answers (what the system is scored on, and
    the reward of the trajectory-level ablation), whichever agents' rewards the recipe trains on;
    ``mask/illegal_format_frac``: the share of calls outside their role's strict format (penalised or not)."""
    finals = [
        f1_reward(episode.final_answer, item["answer"])
        for item, group in zip(items, groups, strict=True)
        for episode in group
    ]
    calls = [call for group in groups for episode in group for call in episode.calls]
    illegal = sum(not FormatCheck.of(call.meta).legal_format for call in calls)
    return {
        "mask/final_answer_f1": (sum(finals), float(len(finals))),
        "mask/illegal_format_frac": (float(illegal), float(len(calls))),
    }


rewarded_samples = samples_under(turn_rewards)

METHOD = Method(
    name="mask", rewarded_samples=rewarded_samples, estimator="gae", configure=configure, metrics=step_metrics
)
