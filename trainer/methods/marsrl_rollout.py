"""MarsRL's grouped agentic rollouts and agentic sampling strategies (arXiv:2511.11373 §3.3-3.4).

One question becomes ONE episode holding a tree of calls, every call a training sample:

1. the Solver samples ``group_size`` solutions (each its own call on the bare problem: no retry of a truncated one);
2. each later agent -- Verifier1, Corrector1, Verifier2, Corrector2, the paper's five, cut at ``agents`` -- chooses
   2 outputs of the agent before it (pooled over all of that agent's groups) and samples ``group_size`` outputs on
   EACH, through the V-C system's own steps (``mara_bench.harness.systems.vc.ask_verifier`` / ``ask_corrector``), the
   Verifier and Corrector with the vc system's ``prompts`` set, the Corrector with its ``bug_report`` (the only vc
   options a fixed tree has: ``GROUPED_OPTIONS``).

What may be chosen: a Verifier judges only untruncated solutions (the evaluation loop never verifies a truncated
one); a Corrector revises only after a report whose verdict is Wrong ("the Corrector exclusively samples outputs
that contain identified errors"; a truncated or unparsable report flags nothing).

Which 2 are chosen (§3.4), "positive" being an output whose agent reward (``mara_bench.trainer.methods.marsrl``) is +1 -- a
right solution, or a report whose verdict matches the judged solution's true correctness:

* ``random``: 2 of the eligible outputs, uniformly;
* ``balanced``: one positive and one negative; when one kind is missing, both from the other;
* ``adaptive``: the Verifier prefers negative outputs (wrong solutions), the Corrector positive ones (reports that
  rightly flagged an error); the rest of the 2 come from the other kind.

Ties inside a kind are broken by the question's seeded ``random.Random``. With fewer than 2 eligible outputs, all
of them are taken (all solutions right: the Verifier still runs on 2 of them); with none -- no report flags an
error, or every solution was truncated -- the rollout stops there ("the process terminates early"), recorded in
``GroupedRolloutOutcome.stopped``.

Groups (our reading of "samples within the same group are decoded based on a shared input"): the Solver's
``group_size`` calls are one group per question; every later agent's ``group_size`` calls on one chosen output are
one group per (question, agent, that output). So a question gives ``group_size`` Solver samples and at most
``2 * group_size`` samples for each later agent, in groups of ``group_size``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, zip_longest
from typing import Literal

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, ModelCall
from mara_bench.harness.systems.outcomes import Outcome, VerifierOutcome
from mara_bench.harness.systems.vc import (
    CORRECTOR,
    DEFAULT_PROMPTS,
    SOLVER,
    VERIFIER,
    BugReport,
    ask_corrector,
    ask_solver,
    ask_verifier,
)
from mara_bench.trainer.config import MARSRL_SELECTIONS

STAGES = (SOLVER, VERIFIER, CORRECTOR, VERIFIER, CORRECTOR)
"""The paper's five training agents in order: Solver, Verifier1, Corrector1, Verifier2, Corrector2."""
INPUTS_PER_AGENT = 2
"""How many of the previous agent's outputs each later agent samples a group on (§3.3)."""
GROUPED_OPTIONS = ("prompts", "bug_report")
"""The vc system options a grouped rollout takes (``task.system_options``); the loop's own (``accept_after``,
``max_iterations``, ``solver_attempts``) do not apply to a fixed tree of agents without retries."""

Rewards = Callable[[Episode], dict[int, float]]
"""Call id -> agent reward (+1 positive, else negative) of every call in an episode so far."""


def stage_agent(stage: int) -> str:
    """The agent name of stage ``stage`` of ``STAGES``: solver, verifier1, corrector1, verifier2, corrector2."""
    return SOLVER if stage == 0 else f"{STAGES[stage]}{(stage + 1) // 2}"


def choose(positive: list[bool], selection: str, prefer: bool, rng: random.Random) -> list[int]:
    """Indices of the (at most ``INPUTS_PER_AGENT``) eligible outputs to sample on, given which are positive;
    ``prefer`` is the kind ``adaptive`` takes first (see the module docstring)."""
    if selection not in MARSRL_SELECTIONS:
        raise ValueError(f"selection must be one of {', '.join(MARSRL_SELECTIONS)}; got {selection!r}")
    indices = list(range(len(positive)))
    if selection == "random":
        return rng.sample(indices, min(INPUTS_PER_AGENT, len(indices)))
    preferred = [i for i in indices if positive[i] == prefer]
    others = [i for i in indices if positive[i] != prefer]
    rng.shuffle(preferred)
    rng.shuffle(others)
    if selection == "adaptive":
        order = preferred + others
    else:  # balanced: alternate the kinds, then whatever is left of the longer one
        order = [i for i in chain.from_iterable(zip_longest(preferred, others)) if i is not None]
    return order[:INPUTS_PER_AGENT]


@dataclass
class GroupedRolloutOutcome(Outcome):
    """A grouped agentic rollout's episode (``episode.meta``): how its tree was grown."""

    rollout: Literal["grouped"]
    """Marks the episode as a grouped rollout (its later agents are grouped per shared input)."""
    selection: str
    """The strategy that chose each agent's 2 inputs: ``random``, ``balanced`` or ``adaptive``."""
    chosen: dict[str, list[int]] = field(default_factory=dict)
    """Per agent (``verifier1``, ``corrector1``...): the ids of the calls it was given as inputs."""
    stopped: str | None = None
    """The agent the rollout stopped before because no output of the previous agent was eligible."""


def eligible(call: ModelCall) -> bool:
    """Whether the next agent may take ``call``: an untruncated solution, or a report whose verdict is Wrong."""
    if call.role == VERIFIER:
        return VerifierOutcome.of(call.meta).verdict is False
    return call.reply.finish_reason != "length"


async def grouped_rollout(
    question: str,
    chat: Chat,
    rewards: Rewards,
    *,
    group_size: int,
    selection: str,
    agents: int,
    rng: random.Random,
    prompts: str = DEFAULT_PROMPTS,
    bug_report: BugReport = "findings",
) -> Episode:
    """One question's grouped agentic rollout (module docstring) as one ``vc`` episode whose calls form the tree;
    ``episode.meta`` records the rollout, the chosen inputs per agent and where it stopped early (if it did)."""
    if group_size < 1 or not 2 <= agents <= len(STAGES):
        raise ValueError(
            f"grouped rollouts need group_size >= 1 and 2 <= agents <= {len(STAGES)}; "
            f"got group_size={group_size}, agents={agents}"
        )
    recorder = EpisodeRecorder("vc", question, chat)
    episode = recorder.episode
    outcome = GroupedRolloutOutcome("grouped", selection)
    outcome.record(
        episode.meta
    )  # marked grouped from the start: pipelined runs train its agents as they finish
    outputs = list(await asyncio.gather(*(ask_solver(recorder) for _ in range(group_size))))
    for stage in range(1, agents):
        agent = stage_agent(stage)
        candidates = [call for call in outputs if eligible(call)]
        if not candidates:
            outcome.stopped = agent
            break
        reward = rewards(episode)
        positive = [reward[call.id] > 0 for call in candidates]
        # adaptive: a Verifier prefers wrong solutions, a Corrector reports that rightly flagged an error
        prefer = STAGES[stage] == CORRECTOR
        chosen = [candidates[i] for i in choose(positive, selection, prefer, rng)]
        outcome.chosen[agent] = [call.id for call in chosen]
        verifying = STAGES[stage] == VERIFIER
        ask = (
            partial(ask_verifier, prompts=prompts)
            if verifying
            else partial(ask_corrector, cut=bug_report, prompts=prompts)
        )
        outputs = list(
            await asyncio.gather(
                *(ask(recorder, call, stage // 2) for call in chosen for _ in range(group_size))
            )
        )
    outcome.record(episode.meta)
    return episode
