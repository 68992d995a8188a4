"""Held-out evaluation: the live policy's skill on the task's held-out split (``task.heldout``: countries, sums and
questions no training step sees), scored by the same judges and reward code as training. ``heldout/...`` metrics:

* a tool-using system (MARS, M-ASK, MATPO on the generated look-up task): ``eval.samples`` runs of the recipe's
  system per held-out question, with the rollout's sampling settings --
  ``heldout/answer_accuracy`` (the task's reward: exact match of the final answer, ``mara_bench.judges.lexical``),
  ``heldout/answer_given`` (episodes that ended with a final answer in the system's format, right or wrong: a
  rise that is format only shows here and not in the accuracy),
  ``heldout/role/<role>/names_gold`` (episodes whose last reply of that role contains the gold answer, the lexical
  judge's cover-EM: System 1, the Summary agent or the MATPO worker picking the gold passage on a country it never
  trained on), ``heldout/role/<role>/reward_mean`` (the method's own per-role reward) and the method's metrics
  (``heldout/mask/final_answer_f1``);
* the V-C system (MarsRL): a probe of the Verifier -- per held-out question one right and one wrong scripted
  solution (the sum, and the sum off by 1 to 3 as the demonstrations' wrong Solver writes), each judged
  ``eval.samples`` times by the policy through the system's own ``ask_verifier``: ``heldout/verifier_recall``
  (wrong solutions flagged), ``heldout/verifier_false_alarm_rate`` (right ones flagged),
  ``heldout/verifier_precision`` (flags on wrong ones) and ``heldout/verifier_no_verdict`` (reports without a
  parsable verdict, counted as no flag), overall and per sum (``heldout/verifier_recall/sum_12``); and a probe of
  the Corrector -- per held-out question the wrong solution, a report flagging it (the demonstrations' Verifier
  at full skill, worked when ``warmup.demo_work`` names the Verifier) and ``eval.samples`` revisions by the policy
  through the system's own ``ask_corrector``: ``heldout/corrector_fix_rate`` (revisions whose answer is the sum) and
  ``heldout/corrector_answer_given`` (revisions with an answer the ``math`` judge reads, right or wrong).

Each run draws from a seed fixed by (run seed, question, sample): every evaluation of a run asks the same draws of
a changing policy. The random generators' states are restored afterwards, so a run trains exactly as it would
without its evaluations.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, Message, Reply
from mara_bench.harness.prompts.sets import PROMPTS_OPTION
from mara_bench.harness.systems import run_system
from mara_bench.harness.systems.outcomes import VerifierOutcome
from mara_bench.harness.systems.parsing import strip_thinking
from mara_bench.harness.systems.vc import (
    DEFAULT_PROMPTS,
    SOLVER,
    VERIFIER,
    ask_corrector,
    ask_solver,
    ask_verifier,
    solution_text,
)
from mara_bench.judges.lexical import score
from mara_bench.judges.math import extract_answer
from mara_bench.trainer.algorithms.rewards import gold_text
from mara_bench.trainer.config import ConfigError, EvalConfig
from mara_bench.trainer.demos.vc import last_digit_check, verdict
from mara_bench.trainer.episode_seeds import SEED_BITS, bind_episode_seed
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.methods.base import Method, Ratio
from mara_bench.trainer.methods.marsrl import solution_is_correct
from mara_bench.trainer.rollouts.rollout import Rollout
from mara_bench.trainer.rollouts.scoring import ratio_metrics
from mara_bench.trainer.run.progress import gathered

PREFIX = "heldout/"
WRONG_OFFSETS = (-3, -2, -1, 1, 2, 3)
"""How far the probe's wrong solution is from the sum (the demonstrations' wrong Solver's offsets)."""


@dataclass(frozen=True)
class Evaluation:
    """What a held-out evaluation runs with: the recipe's ``eval`` section and seed, the ranks, the rollout (task,
    system and its options, the policy's chat), the method that rewards the runs, and the policy."""

    settings: EvalConfig
    seed: int
    dist: Distributed
    rollout: Rollout
    method: Method
    policy: torch.nn.Module
    worked_roles: frozenset[str] = frozenset()
    """The roles whose demonstrations showed their working (``warmup.demo_work``); where the Verifier's did, the
    Corrector probe's report shows its check (the form the Corrector trained after)."""

    @property
    def task(self) -> Any:
        return self.rollout.task

    @property
    def roles(self) -> list[str]:
        return list(self.rollout.system.roles)

    @property
    def tokenizer(self) -> Any:
        return self.rollout.tokenizer


def heldout_items(task: Any) -> list[dict[str, Any]]:
    """The task's held-out questions (empty when it has no held-out split)."""
    return list(getattr(task, "heldout", None) or [])


def check_heldout(task: Any, every: int) -> None:
    """Raise ``ConfigError`` when ``eval.every`` asks for evaluations the task has no held-out split for."""
    if every and not heldout_items(task):
        raise ConfigError(
            "eval.every: the task has no held-out split; set task.args.heldout_prompts (lookup_task with "
            "generated: true, or addition_task with heldout_totals), or set eval.every: 0"
        )


def episode_seed(run_seed: int, item: dict[str, Any], sample: int) -> int:
    """The seed of one held-out run: the same at every evaluation of a run."""
    return random.Random(f"{run_seed}/{item['id']}/{sample}").getrandbits(SEED_BITS)


@contextmanager
def generators_kept() -> Iterator[None]:
    """Restore python's, numpy's and torch's random states on leaving the block."""
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


@dataclass
class ScriptedSolution:
    """A ``Chat`` whose Solver writes ``solution``; every other role is the ``policy``'s."""

    policy: Chat
    solution: str

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        if role == SOLVER:
            return Reply(text=self.solution, model="heldout-probe")
        return await self.policy(role, messages, **sampling)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)


@dataclass
class ScriptedReport(ScriptedSolution):
    """A ``ScriptedSolution`` whose Verifier writes ``report`` as well: only the Corrector is the ``policy``'s."""

    report: str = ""

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        if role == VERIFIER:
            return Reply(text=self.report, model="heldout-probe")
        return await super().__call__(role, messages, **sampling)


def probe_solutions(item: dict[str, Any]) -> dict[bool, str]:
    """The right and the wrong boxed solution the probe judges for one question (the offset drawn from its id)."""
    answer = int(gold_text(item["answer"]))
    wrong = answer + random.Random(str(item["id"])).choice(WRONG_OFFSETS)
    return {True: f"\\boxed{{{answer}}}", False: f"\\boxed{{{wrong}}}"}


async def judged(item: dict[str, Any], solution: str, chat: Chat, prompts: str, seed: int) -> Episode:
    """One Verifier call of the policy judging ``solution`` to the item's question (a V-C episode)."""
    bind_episode_seed(seed)
    recorder = EpisodeRecorder("vc", item["question"], ScriptedSolution(chat, solution))
    await ask_verifier(recorder, await ask_solver(recorder), 0, prompts=prompts)
    return recorder.episode


def verifier_ratios(
    items: list[dict[str, Any]], episodes: list[Episode], sums: Sequence[str] = ()
) -> dict[str, Ratio]:
    """Recall, false-alarm rate, precision and no-verdict share of the probe's Verifier calls, overall and per sum
    (``/sum_<n>``: every one of ``sums``, and those of ``items``); ``episodes`` are the probe's, each holding one
    judged solution and its report."""
    counts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for key in ("", *(f"/sum_{total}" for total in sums)):  # the same names on every rank
        counts[key]["reports"] += 0
    for item, episode in zip(items, episodes, strict=True):
        gold = gold_text(item["answer"])
        solution, report = episode.calls
        verdict = VerifierOutcome.of(report.meta).verdict
        wrong, flagged = not solution_is_correct(solution, gold), verdict is False
        for key in ("", f"/sum_{gold}"):
            bucket = counts[key]
            bucket["wrong"] += wrong
            bucket["right"] += not wrong
            bucket["flagged"] += flagged
            bucket["caught"] += flagged and wrong
            bucket["false_alarm"] += flagged and not wrong
            bucket["no_verdict"] += verdict is None
            bucket["reports"] += 1
    ratios = {}
    for key, bucket in counts.items():
        ratios[f"{PREFIX}verifier_recall{key}"] = (bucket["caught"], bucket["wrong"])
        ratios[f"{PREFIX}verifier_false_alarm_rate{key}"] = (bucket["false_alarm"], bucket["right"])
        ratios[f"{PREFIX}verifier_precision{key}"] = (bucket["caught"], bucket["flagged"])
        ratios[f"{PREFIX}verifier_no_verdict{key}"] = (bucket["no_verdict"], bucket["reports"])
    return ratios


async def verifier_probe(
    run: Evaluation, items: list[dict[str, Any]], *, show: bool = False
) -> dict[str, Ratio]:
    """The Verifier probe's ratios over ``items`` (see the module docstring)."""
    prompts = run.rollout.system_options.get(PROMPTS_OPTION, DEFAULT_PROMPTS)
    samples, seed = run.settings.samples, run.seed
    runs = [
        (item, solution, episode_seed(seed, item, 2 * sample + right))
        for item in items
        for right, solution in probe_solutions(item).items()
        for sample in range(samples)
    ]
    chat = run.rollout.chat
    episodes = await gathered(
        [judged(item, text, chat, prompts, s) for item, text, s in runs], "held-out", show=show
    )
    sums = sorted({gold_text(item["answer"]) for item in heldout_items(run.task)}, key=int)
    return verifier_ratios([item for item, _, _ in runs], list(episodes), sums)


def flagging_report(item: dict[str, Any], solution: str, worked: bool) -> str:
    """The report the Corrector probe revises after: the demonstrations' Verifier at full skill on ``solution``
    (``worked``: showing its last-digit check), which flags the probe's wrong solution."""
    judged, answer = extract_answer(solution), gold_text(item["answer"])
    if worked:
        return last_digit_check(item["question"], judged, 1.0, random.Random(0))
    return verdict(judged, answer, 1.0, random.Random(0))


async def revised(item: dict[str, Any], chat: Chat, prompts: str, worked: bool, seed: int) -> Episode:
    """One Corrector call of the policy revising the item's wrong probe solution after a report flagging it."""
    bind_episode_seed(seed)
    solution = probe_solutions(item)[False]
    script = ScriptedReport(chat, solution, flagging_report(item, solution, worked))
    recorder = EpisodeRecorder("vc", item["question"], script)
    report = await ask_verifier(recorder, await ask_solver(recorder), 0, prompts=prompts)
    await ask_corrector(recorder, report, 1, prompts=prompts)
    return recorder.episode


def corrector_ratios(items: list[dict[str, Any]], episodes: list[Episode]) -> dict[str, Ratio]:
    """Fix rate and answer-given share of the probe's Corrector calls (each episode: solution, report, revision)."""
    fixed = given = 0
    for item, episode in zip(items, episodes, strict=True):
        revision = episode.calls[-1]
        fixed += solution_is_correct(revision, gold_text(item["answer"]))
        given += extract_answer(solution_text(revision)) is not None
    return {
        f"{PREFIX}corrector_fix_rate": (fixed, len(items)),
        f"{PREFIX}corrector_answer_given": (given, len(items)),
    }


async def corrector_probe(
    run: Evaluation, items: list[dict[str, Any]], worked: bool = False, *, show: bool = False
) -> dict[str, Ratio]:
    """The Corrector probe's ratios over ``items`` (see the module docstring)."""
    prompts = run.rollout.system_options.get(PROMPTS_OPTION, DEFAULT_PROMPTS)
    runs = [
        (item, episode_seed(run.seed, item, 2 * run.settings.samples + sample))
        for item in items
        for sample in range(run.settings.samples)
    ]
    episodes = await gathered(
        [revised(item, run.rollout.chat, prompts, worked, s) for item, s in runs], "held-out", show=show
    )
    return corrector_ratios([item for item, _ in runs], list(episodes))


def last_reply(episode: Episode, role: str) -> str | None:
    """The text of the episode's last call of ``role`` (its thinking stripped); ``None`` when it made none."""
    calls = episode.calls_by_role(role)
    return strip_thinking(calls[-1].reply.text) if calls else None


def system_ratios(
    run: Evaluation, items: list[dict[str, Any]], groups: list[list[Episode]]
) -> dict[str, Ratio]:
    """Answer accuracy, per-role gold naming and reward, and the method's metrics over the held-out runs."""
    task, method = run.task, run.method
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for role in run.roles:  # the same names on every rank
        sums[f"{PREFIX}role/{role}/names_gold"][1] += 0
        sums[f"{PREFIX}role/{role}/reward_mean"][1] += 0
    for item, episodes in zip(items, groups, strict=True):
        gold = gold_text(item["answer"])
        for episode in episodes:
            sums[f"{PREFIX}answer_accuracy"][0] += task.reward(item, episode)
            sums[f"{PREFIX}answer_accuracy"][1] += 1
            sums[f"{PREFIX}answer_given"][0] += bool((episode.final_answer or "").strip())
            sums[f"{PREFIX}answer_given"][1] += 1
            for role in run.roles:
                reply = last_reply(episode, role)
                if reply is not None:
                    sums[f"{PREFIX}role/{role}/names_gold"][0] += score(reply, gold)["acc"]
                    sums[f"{PREFIX}role/{role}/names_gold"][1] += 1
        for sample in method.rewarded_samples(item, episodes, task, run.tokenizer):
            sums[f"{PREFIX}role/{sample.role}/reward_mean"][0] += sample.reward
            sums[f"{PREFIX}role/{sample.role}/reward_mean"][1] += 1
    ratios: dict[str, Ratio] = {name: (total, count) for name, (total, count) in sums.items()}
    if method.metrics is not None:
        ratios.update({PREFIX + name: ratio for name, ratio in method.metrics(items, groups).items()})
    return ratios


async def system_runs(
    run: Evaluation, items: list[dict[str, Any]], *, show: bool = False
) -> list[list[Episode]]:
    """``eval.samples`` runs of the recipe's system per held-out question, each seeded (``episode_seed``), with
    the task's scripted roles as in training (``show``: a progress bar)."""
    rollout, samples = run.rollout, run.settings.samples

    async def one(item: dict[str, Any], sample: int) -> Episode:
        bind_episode_seed(episode_seed(run.seed, item, sample))
        question, options = rollout.run_input(item)
        return await run_system(
            rollout.system.name, question, rollout.chat_for(item), rollout.toolbox, **options
        )

    runs = await gathered(
        [one(item, sample) for item in items for sample in range(samples)], "held-out", show=show
    )
    return [list(runs[i * samples : (i + 1) * samples]) for i in range(len(items))]


def heldout_metrics(run: Evaluation) -> dict[str, float]:
    """The ``heldout/...`` metrics of the policy now (every rank evaluates its share of the held-out questions)."""
    items = run.dist.shard(heldout_items(run.task))
    run.policy.eval()
    with generators_kept(), run.dist.gathered(run.policy):
        run.rollout.sync(run.policy)
        if run.rollout.system.name == "vc":
            ratios = asyncio.run(verifier_probe(run, items, show=run.dist.is_main))
            ratios |= asyncio.run(
                corrector_probe(run, items, VERIFIER in run.worked_roles, show=run.dist.is_main)
            )
        else:
            ratios = system_ratios(run, items, asyncio.run(system_runs(run, items, show=run.dist.is_main)))
    return ratio_metrics(run.dist, ratios)


def summary_line(metrics: dict[str, float]) -> str:
    """The held-out metrics of one evaluation on one line (per-sum breakdowns left to ``metrics.jsonl``)."""
    shown = [
        f"{name.removeprefix(PREFIX)} {value:.3f}" for name, value in metrics.items() if "/sum_" not in name
    ]
    return ", ".join(shown)


def heldout_table(before: dict[str, float], after: dict[str, float]) -> str:
    """The held-out metrics after the cold start and after the last step, one per line."""
    lines = ["held-out skill, after the cold start -> after RL:"]
    for name in sorted(set(before) & set(after)):
        if "/sum_" not in name:
            lines.append(f"  {name.removeprefix(PREFIX):36s} {before[name]:.3f} -> {after[name]:.3f}")
    return "\n".join(lines)
