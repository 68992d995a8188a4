"""MarsRL (arXiv:2511.11373 §3.1-3.4): agent-specific verifiable rewards for the V-C reasoning system
(``mara_bench.harness.systems.vc``), trained with GRPO normalised per (question, agent).

Rewards (§3.2), each against the reference answer -- never the trajectory's outcome:

* Solver, Corrector1/Corrector2: +1 when the call's own answer matches the reference (``mara_bench.judges.math``), else -1;
* Verifier1/Verifier2: +1 when its verdict (``mara_bench.harness.systems.vc.parse_verdict``, recorded by the system) equals
  the true correctness of the solution it judged, else -1 (an unparsable or truncated report has no verdict: -1).

Agents (§3.1): Verifier1 judges the Solver's solution and Verifier2 a Corrector's; Corrector1 revises after
Verifier1's report and Corrector2 after Verifier2's. Each agent is its own GRPO group within a question
(``<question>/<agent>``). Every call is one sample; a Corrector replays the candidate solution as an assistant turn
of its prompt, which is not trained (only its own reply is).

Rollouts (§3.3-3.4, ``algorithm.marsrl`` in the recipe): ``chains`` (the default) runs the system's ordinary
rollouts, ``group_size`` V-C runs per question, grouped per (question, agent) as above; ``grouped`` runs the
paper's grouped agentic rollouts (``mara_bench.trainer.methods.marsrl_rollout``): one episode per question whose calls form a
tree -- ``group_size`` Solver samples, then each later agent samples ``group_size`` outputs on each of 2 outputs of
the previous agent chosen by the ``random`` / ``balanced`` / ``adaptive`` strategy -- grouped per (question, agent,
shared input): ``<question>/solver`` and ``<question>/<agent>/<input call id>``.

Throughput schedules (§3.3-3.4, ``algorithm.marsrl.pipeline`` / ``rollout.segment_tokens``):
``mara_bench.trainer.rollouts.pipelined`` trains each (question, agent) group as soon as every chain of the question is
past that agent (``AGENT_RANK``, ``next_agent``), while the next agents and questions keep decoding; without
them every agent's samples enter the same step's update once the question's rollout ends.
"""

from __future__ import annotations

import random
from typing import Any

from mara_bench.core.episodes import Chat, Episode, ModelCall
from mara_bench.core.samples import Sample
from mara_bench.harness.systems.outcomes import VerifierOutcome
from mara_bench.harness.systems.vc import CORRECTOR, SOLVER, VERIFIER, solution_text
from mara_bench.judges import cores
from mara_bench.trainer.algorithms.rewards import gold_text
from mara_bench.trainer.config import AlgorithmConfig, RolloutConfig, TaskConfig
from mara_bench.trainer.methods.base import (
    GroupRollout,
    Method,
    Ratio,
    call_samples,
    concatenate,
    role_group,
    train_final_reply_only,
)
from mara_bench.trainer.methods.marsrl_rollout import GROUPED_OPTIONS, GroupedRolloutOutcome, grouped_rollout

POSITIVE, NEGATIVE = 1.0, -1.0


def solution_is_correct(call: ModelCall, reference: str) -> bool:
    """Whether a Solver/Corrector call's answer (text after ``</think>``) matches the reference (§3.2), by the
    ``math`` judge's own core (``mara_bench.judges.cores.math_verdict``, what scores an evaluation)."""
    return cores.math_verdict(solution_text(call), reference)[1]


def agent_rewards(episode: Episode, reference: str) -> dict[int, float]:
    """Call id -> agent-specific reward (§3.2) for every Solver, Verifier and Corrector call of a V-C episode."""
    correct = {
        call.id: solution_is_correct(call, reference)
        for call in episode.calls
        if call.role in (SOLVER, CORRECTOR)
    }
    rewards = {call_id: POSITIVE if ok else NEGATIVE for call_id, ok in correct.items()}
    for call in episode.calls_by_role(VERIFIER):
        report = VerifierOutcome.of(call.meta)
        rewards[call.id] = (
            POSITIVE
            if report.verdict is not None and report.verdict == correct[report.candidate]
            else NEGATIVE
        )
    return rewards


COUNTS = ("flagged", "wrong", "caught", "right", "false_alarm", "to_fix", "fixed", "solved", "solved_right")
"""The counts ``verification_counts`` keeps per episode."""


def verification_counts(episode: Episode, reference: str) -> dict[str, float]:
    """Counts behind the Verifier's error detection (Figure 5: flagging a wrong solution is the positive class),
    the Corrector's fix rate and the Solver's accuracy: ``flagged``, ``wrong`` (judged solutions that are wrong),
    ``caught`` (both), ``right`` (judged solutions that are right), ``false_alarm`` (those flagged), ``to_fix``
    (Corrector calls whose input solution was wrong), ``fixed`` (those whose answer is right), ``solved`` (Solver
    calls) and ``solved_right`` (those whose answer is right)."""
    counts = dict.fromkeys(COUNTS, 0.0)
    correct = {
        call.id: solution_is_correct(call, reference)
        for call in episode.calls
        if call.role in (SOLVER, CORRECTOR)
    }
    for call in episode.calls_by_role(VERIFIER):
        report = VerifierOutcome.of(call.meta)
        flagged, wrong = report.verdict is False, not correct[report.candidate]
        counts["flagged"] += flagged
        counts["wrong"] += wrong
        counts["caught"] += flagged and wrong
        counts["right"] += not wrong
        counts["false_alarm"] += flagged and not wrong
    for call in episode.calls_by_role(CORRECTOR):
        if not correct[VerifierOutcome.of(episode.calls[call.parent].meta).candidate]:
            counts["to_fix"] += 1
            counts["fixed"] += correct[call.id]
    for call in episode.calls_by_role(SOLVER):
        counts["solved"] += 1
        counts["solved_right"] += correct[call.id]
    return counts


def step_metrics(items: list[dict[str, Any]], groups: list[list[Episode]]) -> dict[str, Ratio]:
    """``marsrl/verifier_precision`` (flagged solutions that were wrong), ``marsrl/verifier_recall`` (wrong
    solutions that were flagged), ``marsrl/verifier_false_alarm_rate`` (right solutions that were flagged: recall
    rising with it is a drift towards "Wrong", not skill), ``marsrl/corrector_fix_rate`` (wrong inputs a Corrector
    made right) and ``marsrl/solver_accuracy`` (Solver calls whose answer is right: shown even when
    ``train_agents`` leaves the Solver's rows out of training, and so out of the ``role/solver/...`` metrics).
    Counted over the calls made: under grouped rollouts a Verifier judges the chosen solutions (``adaptive``: wrong
    ones first, ``balanced``: one of each), so precision and recall are measured on that mix, not on the Solver's
    own share of wrong answers."""
    total = dict.fromkeys(COUNTS, 0.0)
    for item, episodes in zip(items, groups, strict=True):
        for episode in episodes:
            for name, value in verification_counts(episode, gold_text(item["answer"])).items():
                total[name] += value
    return {
        "marsrl/verifier_precision": (total["caught"], total["flagged"]),
        "marsrl/verifier_recall": (total["caught"], total["wrong"]),
        "marsrl/verifier_false_alarm_rate": (total["false_alarm"], total["right"]),
        "marsrl/corrector_fix_rate": (total["fixed"], total["to_fix"]),
        "marsrl/solver_accuracy": (total["solved_right"], total["solved"]),
    }


def agent(call: ModelCall, episode: Episode) -> str:
    """The agent of §3.1 a call plays: solver, verifier1/verifier2 (judging the Solver's / a Corrector's
    solution), corrector1/corrector2 (revising after a verifier1 / verifier2 report)."""
    if call.role == SOLVER:
        return SOLVER
    if call.role == VERIFIER:
        judged = episode.calls[VerifierOutcome.of(call.meta).candidate]
        return f"{VERIFIER}{1 if judged.role == SOLVER else 2}"
    report = episode.calls[call.parent]
    return f"{CORRECTOR}{agent(report, episode)[-1]}"


def group_key(item: dict[str, Any], call: ModelCall, episode: Episode) -> str:
    """``<question>/<agent>``; in a grouped rollout a later agent's groups share one input:
    ``<question>/<agent>/<input call id>``."""
    key = role_group(item, agent(call, episode))
    grouped = GroupedRolloutOutcome.recorded(episode.meta) and call.role != SOLVER
    return f"{key}/{call.parent}" if grouped else key


AGENT_RANK = {SOLVER: 0, f"{VERIFIER}1": 1, f"{CORRECTOR}1": 2, f"{VERIFIER}2": 3, f"{CORRECTOR}2": 3}
"""Where each agent of a V-C chain comes: a chain never goes back to an agent of a lower rank (Verifier2 and
Corrector2 alternate until the chain ends)."""


def next_agent(episode: Episode, role: str) -> str:
    """The agent a call of ``role`` that ``episode`` issues now plays (its finished calls are in ``calls``)."""
    if role == SOLVER:
        return SOLVER
    corrected = any(call.role == CORRECTOR for call in episode.calls)
    return f"{role}{2 if corrected else 1}"


def call_samples_of(
    item: dict[str, Any], episode: Episode, tokenizer: Any, calls: list[ModelCall]
) -> list[Sample]:
    """One sample per call of ``calls`` (finished calls of ``episode``, which may still be running), in order,
    rewarded by its agent's reward and grouped by ``group_key``."""
    rewards = agent_rewards(episode, gold_text(item["answer"]))
    samples = call_samples(tokenizer, calls, rewards, lambda call: group_key(item, call, episode))
    return [train_final_reply_only(s) if s.role == CORRECTOR else s for s in samples]


def episode_samples(item: dict[str, Any], episode: Episode, tokenizer: Any) -> list[Sample]:
    """One sample per call, rewarded by its agent's reward and grouped by ``group_key``."""
    return call_samples_of(item, episode, tokenizer, episode.calls)


def rewarded_samples(
    item: dict[str, Any], episodes: list[Episode], task: Any, tokenizer: Any
) -> list[Sample]:  # task unused: rewards come from the reference answer, not the task's outcome
    return concatenate([episode_samples(item, episode, tokenizer) for episode in episodes])


def rollout(algorithm: AlgorithmConfig, task: TaskConfig, settings: RolloutConfig) -> GroupRollout | None:
    """The grouped agentic rollout under ``algorithm.marsrl.rollout: grouped`` (``None`` for ``chains``: the
    engine's ordinary V-C runs)."""
    options = algorithm.marsrl
    if options.rollout == "chains":
        return None
    if task.system != "vc":
        raise ValueError(
            f"algorithm.marsrl.rollout 'grouped' branches the vc system; task.system is {task.system!r}"
        )
    system_options = task.system_options
    loop_options = sorted(set(system_options) - set(GROUPED_OPTIONS))
    if loop_options:
        raise ValueError(
            f"task.system_options {loop_options} do not apply to algorithm.marsrl.rollout 'grouped' (a fixed tree "
            f"of algorithm.marsrl.agents agents, no retries); remove them (it takes only {', '.join(GROUPED_OPTIONS)})"
        )

    async def sample(item: dict[str, Any], chat: Chat, rng: random.Random) -> list[Episode]:
        reference = gold_text(item["answer"])
        episode = await grouped_rollout(
            item["question"],
            chat,
            lambda episode: agent_rewards(episode, reference),
            group_size=settings.group_size,
            selection=options.selection,
            agents=options.agents,
            rng=rng,
            **system_options,
        )
        return [episode]

    return sample


METHOD = Method(
    name="marsrl", rewarded_samples=rewarded_samples, estimator="grpo", rollout=rollout, metrics=step_metrics
)
