"""The cold start: supervised fine-tuning on scripted demonstrations before RL (a recipe's ``warmup:`` section).

An untrained model never writes a tool call, a verdict or a worker request, so every later agent of a multi-agent
system stays silent and its advantages are zero. The warm-up fixes that the way the papers' cold starts do:

1. demonstrations -- for every question of the task, ``warmup.demos_per_item`` runs of the recipe's OWN system
   (``mara_bench.harness.systems``; under MarsRL's grouped rollouts, the method's own rollout) with a scripted ``Chat`` that
   plays each role (``mara_bench.trainer.demos``), so the Episodes are exactly what RL rollouts produce;
2. samples -- the method's own episode-to-samples code (``method.rewarded_samples``), so the loss masks are the
   ones the RL stage uses (tool outputs, other agents' turns and replayed solutions are never trained on);
3. fine-tuning -- ``warmup.steps`` AdamW steps from ``warmup.lr`` decaying linearly towards 0, on the token-mean
   cross-entropy of the masked response tokens, ``warmup.batch_size`` demonstration samples a step, cycling over
   the shuffled set;
4. the critic (GAE recipes: M-ASK's shared critic) -- ``warmup.critic_steps`` steps regressing its values on the
   demonstrations' returns, so PPO's first advantages have a baseline: with a freshly initialised value head
   every token's advantage is ``R - V_t`` with ``V_t`` noise (on mask-tiny, 30 RL steps: the sign of a trained
   token's advantage agreed with its row's reward minus the batch mean for 0.73 of the tokens without this
   step, 0.86 with 100 critic steps). verl's ``critic_warmup`` serves the same purpose with rollouts.

The RL stage then starts from the fine-tuned policy (its own optimizer, untouched here), which also becomes the
reference model of the KL penalty (``algorithm.kl_coef`` > 0), as verl's reference is the actor RL starts from.
``warm_up`` writes one JSON line per step to ``<run>/warmup.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.harness.systems import run_system
from mara_bench.trainer.config import OptimConfig, WarmupConfig
from mara_bench.trainer.demos import ScriptedChat, demo_policy
from mara_bench.trainer.episode_seeds import SEED_BITS, bind_episode_seed
from mara_bench.trainer.learner.adamw import adamw
from mara_bench.trainer.learner.adapters import adapter_parameters, plan_of
from mara_bench.trainer.learner.models import Models
from mara_bench.trainer.learner.packing import micro_batches, response_logits, response_values, token_logprobs
from mara_bench.trainer.methods.base import Method, concatenate
from mara_bench.trainer.rollouts.rollout import Rollout
from mara_bench.trainer.run.progress import bar, counted

logger = logging.getLogger(__name__)

T = TypeVar("T")


WARMUP_FILE = "warmup.jsonl"


@dataclass
class WarmupStep:
    """One fine-tuning step's record."""

    step: int
    loss: float
    """Token-mean cross-entropy of the step's trained tokens (before the update)."""
    tokens: int
    """Trained (masked-in) response tokens in the step."""
    model: str = "policy"
    """What the step fitted: the ``policy`` (cross-entropy) or the ``critic`` (value regression)."""


@dataclass(frozen=True)
class Demos:
    """What the demonstrations are made with: the recipe's rollout (task, system, toolbox, the method's own
    rollout), the method that turns episodes into samples, the policy's tokenizer and the ``warmup:``
    settings."""

    rollout: Rollout
    method: Method
    tokenizer: Any
    settings: WarmupConfig


async def demo_episodes(demos: Demos, item: dict[str, Any], rng: random.Random) -> list[Episode]:
    """One question's demonstration episodes, run through the recipe's system (or its method's rollout), less
    those its judge left unscored (``judged``)."""
    rollout = demos.rollout
    settings = demos.settings
    chat = ScriptedChat(
        demo_policy(rollout.system.name), item, rng, demos.tokenizer, settings.demo_skills, settings.demo_work
    )
    seeds = [rng.getrandbits(SEED_BITS) for _ in range(settings.demos_per_item)]
    if rollout.own_rollout is not None:
        groups = [await seeded(seed, rollout.own_rollout(item, chat, rng)) for seed in seeds]
        return await judged(rollout.task, item, [episode for group in groups for episode in group])
    question, options = rollout.run_input(item)
    runs = [
        seeded(seed, run_system(rollout.system.name, question, chat, rollout.toolbox, **options))
        for seed in seeds
    ]
    return await judged(rollout.task, item, list(await asyncio.gather(*runs)))


async def seeded(seed: int, run: Awaitable[T]) -> T:
    """``run`` awaited in its own task with ``seed`` bound as its episode seed
    (``mara_bench.trainer.episode_seeds``)."""

    async def bound() -> T:
        bind_episode_seed(seed)
        return await run

    return await asyncio.create_task(bound())


async def judged(task: Any, item: dict[str, Any], episodes: list[Episode]) -> list[Episode]:
    """The episodes the task's judge scored: a task that grades asynchronously (an LLM judge) is asked here, as
    in the RL rollouts, so its ``reward`` reads the verdicts; an unscored episode is dropped, never rewarded 0."""
    grade = getattr(task, "grade", None)
    if grade is None:
        return episodes
    verdicts = await asyncio.gather(*[grade(item, episode) for episode in episodes])
    return [episode for episode, verdict in zip(episodes, verdicts, strict=True) if verdict is not None]


def demo_samples(demos: Demos, seed: int, *, show: bool = True) -> list[Sample]:
    """Every question's demonstration samples, made by the method's own ``rewarded_samples`` (``show``: a
    progress bar)."""
    rng = random.Random(seed)
    task, groups = demos.rollout.task, []
    for item in counted(task.items, len(task.items), "warmup demonstrations", show=show, unit="question"):
        episodes = asyncio.run(demo_episodes(demos, item, random.Random(rng.getrandbits(64))))
        groups.append(demos.method.rewarded_samples(item, episodes, task, demos.tokenizer))
    return concatenate(groups)


def role_counts(samples: list[Sample]) -> dict[str, int]:
    """Samples per role."""
    counts: dict[str, int] = defaultdict(int)
    for sample in samples:
        counts[sample.role] += 1
    return dict(sorted(counts.items()))


@dataclass
class RoleStats:
    """What one role got in a step: what the cold start is for is that every role has rows with a signal."""

    samples: int
    reward_mean: float
    nonzero_advantage: int
    """Rows with a non-zero advantage on at least one trained token."""


def has_signal(sample: Sample) -> bool:
    """Whether the row's advantage is non-zero on some token of its loss mask."""
    advantage = sample.advantage if sample.advantage is not None else 0.0
    values = advantage if isinstance(advantage, list) else [advantage] * len(sample.loss_mask)
    return any(abs(value) > 1e-8 for value, kept in zip(values, sample.loss_mask, strict=True) if kept)


def role_stats(samples: list[Sample]) -> dict[str, RoleStats]:
    """Per role: its rows, their mean reward and how many carry a non-zero advantage (after the update)."""
    by_role: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_role[sample.role].append(sample)
    return {
        role: RoleStats(
            samples=len(rows),
            reward_mean=sum(s.reward for s in rows) / len(rows),
            nonzero_advantage=sum(map(has_signal, rows)),
        )
        for role, rows in sorted(by_role.items())
    }


def cross_entropy(
    model: torch.nn.Module, samples: list[Sample], token_budget: int
) -> tuple[torch.Tensor, int]:
    """Token-mean negative log-likelihood of the samples' masked-in response tokens (backpropagated per
    micro-batch) and the number of those tokens."""
    batches = micro_batches(samples, token_budget)
    masks = {i: torch.tensor(s.loss_mask, dtype=torch.float32) for i, s in enumerate(samples)}
    tokens = int(sum(m.sum() for m in masks.values()))
    total = torch.zeros(())
    for batch in batches:
        logprobs = token_logprobs(response_logits(model, batch), batch.targets)
        mask = torch.cat([masks[row] for row in batch.rows]).to(logprobs.device)
        loss = -(logprobs * mask).sum() / max(tokens, 1)
        loss.backward()
        total = total + loss.detach().cpu()
    return total, tokens


def demo_returns(samples: list[Sample], gamma: float) -> list[torch.Tensor]:
    """Each sample's Monte-Carlo return per response token: its reward, placed on its last trained token as the RL
    stage places it, discounted by ``gamma`` per later trained token (0 on untrained tokens)."""
    returns = []
    for sample in samples:
        mask = torch.tensor(sample.loss_mask, dtype=torch.float32)
        later = mask.flip(0).cumsum(0).flip(0) - mask  # trained tokens after each position
        returns.append(sample.reward * gamma**later * mask)
    return returns


def value_regression(
    critic: torch.nn.Module, samples: list[Sample], token_budget: int, gamma: float
) -> tuple[torch.Tensor, int]:
    """Token-mean ``0.5 * (V - G)^2`` of the critic's values against the samples' returns (``demo_returns``) over
    their masked-in response tokens (backpropagated per micro-batch), and the number of those tokens."""
    batches = micro_batches(samples, token_budget)
    masks = {i: torch.tensor(s.loss_mask, dtype=torch.float32) for i, s in enumerate(samples)}
    returns = dict(enumerate(demo_returns(samples, gamma)))
    tokens = int(sum(m.sum() for m in masks.values()))
    total = torch.zeros(())
    for batch in batches:
        values = response_values(critic, batch)
        mask = torch.cat([masks[row] for row in batch.rows]).to(values.device)
        target = torch.cat([returns[row] for row in batch.rows]).to(values.device)
        loss = 0.5 * ((values - target).square() * mask).sum() / max(tokens, 1)
        loss.backward()
        total = total + loss.detach().cpu()
    return total, tokens


Objective = Callable[[torch.nn.Module, list[Sample]], tuple[torch.Tensor, int]]
"""``objective(model, batch) -> (loss, trained tokens)``, backpropagated inside."""


def cycled_batches(samples: list[Sample], size: int, rng: random.Random) -> Iterator[list[Sample]]:
    """``size`` samples at a time, for ever: through the set in a shuffled order, reshuffled each time round (a
    batch may span two rounds)."""
    order: list[int] = []
    while True:
        if len(order) < size:
            fresh = list(range(len(samples)))
            rng.shuffle(fresh)
            order += fresh
        yield [samples[i] for i in order[:size]]
        order = order[size:]


def cold_start_groups(
    model: torch.nn.Module, warmup: WarmupConfig, optim: OptimConfig
) -> list[dict[str, Any]]:
    """The optimizer's parameter groups in the cold start: every weight at ``warmup.lr``, or under per-role
    adapters each trained adapter at its own rate (``RoleAdapters.cold_start_rates``)."""
    plan = plan_of(model)
    if plan is None:
        return [{"params": list(model.parameters()), "lr": warmup.lr}]
    rates = plan.cold_start_rates(warmup.lr, optim.lr)
    return [{"params": adapter_parameters(model, name), "lr": lr} for name, lr in rates.items()]


def fit(
    name: str,
    model: torch.nn.Module,
    objective: Objective,
    samples: list[Sample],
    steps: int,
    warmup: WarmupConfig,
    optim: OptimConfig,
    seed: int,
    *,
    show: bool = True,
) -> list[WarmupStep]:
    """``steps`` AdamW steps (learning rate decaying linearly from ``warmup.lr``, per parameter group as
    ``cold_start_groups`` gives them) of ``objective`` on ``samples``, ``warmup.batch_size`` a step, cycling over
    the shuffled set; ``name`` labels the records (``policy``, ``critic``); ``show``: a progress bar with the
    loss."""
    batches = cycled_batches(samples, warmup.batch_size, random.Random(seed))
    optimizer = adamw(cold_start_groups(model, warmup, optim), betas=optim.betas)
    decay = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    model.train()
    records = []
    progress = bar(steps, f"warmup {name}", show=show, unit="step")
    for step in range(steps):
        loss, tokens = objective(model, next(batches))
        torch.nn.utils.clip_grad_norm_(model.parameters(), optim.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        decay.step()
        records.append(WarmupStep(step=step, loss=float(loss), tokens=tokens, model=name))
        progress.set_postfix(loss=f"{float(loss):.3f}", refresh=False)
        progress.update()
        if step % 10 == 0 or step == steps - 1:
            logger.info("warmup %s step %d: loss %.3f", name, step, float(loss))
    progress.close()
    model.eval()
    return records


def warm_up(
    demos: Demos,
    models: Models,
    settings: WarmupConfig,
    optim: OptimConfig,
    run_dir: Path,
    *,
    seed: int,
    gamma: float,
    write: bool = True,
) -> list[WarmupStep]:
    """Fine-tune the policy of ``models`` on the ``demos`` (module docstring) under the recipe's ``warmup`` and
    ``optim`` sections, then fit its critic (GAE recipes, ``warmup.critic_steps``) to their returns discounted by
    ``gamma``; a no-op with ``warmup.steps: 0``. Returns the policy's records; with ``write`` (the main rank) every
    record goes to ``<run>/warmup.jsonl``."""
    if settings.steps == 0:
        return []
    samples = demo_samples(demos, seed, show=write)
    if models.adapters is not None:  # a frozen adapter learns nothing from its role's demonstrations
        samples = [s for s in samples if s.role not in models.adapters.frozen_roles]
    logger.info("warmup: %d demonstration samples %s", len(samples), role_counts(samples))
    if models.adapters is not None:
        rates = models.adapters.cold_start_rates(settings.lr, optim.lr)
        logger.info(
            "warmup: adapter learning rates %s", ", ".join(f"{name} {lr:g}" for name, lr in rates.items())
        )
    budget = optim.token_budget
    records = fit(
        "policy",
        models.policy,
        lambda model, batch: cross_entropy(model, batch, budget),
        samples,
        settings.steps,
        settings,
        optim,
        seed,
        show=write,
    )
    # the KL penalty holds RL near the cold-start policy, not the base weights
    if (
        models.reference is not None and models.adapters is None
    ):  # per-role adapters: the reference is the base
        models.reference.load_state_dict(models.policy.state_dict())
    critic_records = []
    if models.critic is not None and settings.critic_steps:
        critic_records = fit(
            "critic",
            models.critic,
            lambda model, batch: value_regression(model, batch, budget, gamma),
            samples,
            settings.critic_steps,
            settings,
            optim,
            seed,
            show=write,
        )
    if write:
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / WARMUP_FILE, "w") as out:
            for record in records + critic_records:
                out.write(json.dumps(asdict(record)) + "\n")
    logger.info("warmup: %d steps, loss %.3f -> %.3f", len(records), records[0].loss, records[-1].loss)
    if critic_records:
        logger.info(
            "warmup: critic %d steps, value loss %.3f -> %.3f",
            len(critic_records),
            critic_records[0].loss,
            critic_records[-1].loss,
        )
    return records
