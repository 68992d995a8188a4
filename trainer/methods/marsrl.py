"""MarsRL (seeds/001 §3.1-3.3): agent-specific verifiable rewards for the V-C reasoning system
(``harness.systems.vc``), trained with GRPO normalised per (question, agent).

Rewards (§3.2), each against the reference answer -- never the trajectory's outcome:

* Solver, Corrector1/Corrector2: +1 when the call's own answer matches the reference (``judges.math``), else -1;
* Verifier1/Verifier2: +1 when its verdict (``harness.systems.vc.parse_verdict``, recorded by the system) equals
  the true correctness of the solution it judged, else -1 (an unparsable or truncated report has no verdict: -1).

Agents (§3.1): Verifier1 judges the Solver's solution and Verifier2 a Corrector's; Corrector1 revises after
Verifier1's report and Corrector2 after Verifier2's. Each agent is its own GRPO group within a question
(``<question>/<agent>``). Every call is one sample; a Corrector replays the candidate solution as an assistant turn
of its prompt, which is not trained (only its own reply is).

Of §3.3-3.4, implemented: agent-specific rewards and per-agent grouping over the system's ordinary rollouts
(``group_size`` V-C runs per question). Not implemented: grouped agentic rollouts (each agent sampling a group on 2
chosen outputs of the previous one) and the random / balanced / adaptive choice of those outputs -- they need the
rollout to branch inside the system, which runs one chain per episode; agentic pipeline parallelism and segment
rollouts (throughput schedules: here every agent's samples enter the same step's update once the episode ends).
"""

from __future__ import annotations

from typing import Any

from harness.systems.parsing import strip_thinking
from harness.systems.types import Episode, ModelCall
from harness.systems.vc import CORRECTOR, SOLVER, VERIFIER
from judges.math import extract_answer, is_equivalent
from trainer.methods.base import Method, call_samples, concatenate, role_group, train_final_reply_only
from trainer.samples import Sample

POSITIVE, NEGATIVE = 1.0, -1.0


def solution_is_correct(call: ModelCall, reference: str) -> bool:
    """Whether a Solver/Corrector call's answer (text after ``</think>``) matches the reference (§3.2)."""
    return is_equivalent(extract_answer(strip_thinking(call.reply.text)), reference)


def agent_rewards(episode: Episode, reference: str) -> dict[int, float]:
    """Call id -> agent-specific reward (§3.2) for every Solver, Verifier and Corrector call of a V-C episode."""
    correct = {
        call.id: solution_is_correct(call, reference)
        for call in episode.calls
        if call.role in (SOLVER, CORRECTOR)
    }
    rewards = {call_id: POSITIVE if ok else NEGATIVE for call_id, ok in correct.items()}
    for call in episode.calls_by_role(VERIFIER):
        verdict = call.meta.get("verdict")
        rewards[call.id] = (
            POSITIVE if verdict is not None and verdict == correct[call.meta["candidate"]] else NEGATIVE
        )
    return rewards


def agent(call: ModelCall, episode: Episode) -> str:
    """The agent of §3.1 a call plays: solver, verifier1/verifier2 (judging the Solver's / a Corrector's
    solution), corrector1/corrector2 (revising after a verifier1 / verifier2 report)."""
    if call.role == SOLVER:
        return SOLVER
    if call.role == VERIFIER:
        judged = episode.calls[call.meta["candidate"]]
        return f"{VERIFIER}{1 if judged.role == SOLVER else 2}"
    report = episode.calls[call.parent]
    return f"{CORRECTOR}{agent(report, episode)[-1]}"


def episode_samples(item: dict[str, Any], episode: Episode, tokenizer: Any) -> list[Sample]:
    """One sample per call, rewarded by its agent's reward and grouped by (question, agent)."""
    rewards = agent_rewards(episode, str(item["answer"]))
    samples = call_samples(
        tokenizer, episode.calls, rewards, lambda call: role_group(item, agent(call, episode))
    )
    return [train_final_reply_only(s) if s.role == CORRECTOR else s for s in samples]


def rewarded_samples(
    item: dict[str, Any], episodes: list[Episode], task: Any, tokenizer: Any
) -> list[Sample]:  # task unused: rewards come from the reference answer, not the task's outcome
    return concatenate([episode_samples(item, episode, tokenizer) for episode in episodes])


METHOD = Method(name="marsrl", rewarded_samples=rewarded_samples, estimator="grpo")
