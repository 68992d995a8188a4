"""Rollout-trainer parity: do the logprobs the generation engine reported equal the trainer's own forward pass?

Every generated token carries the logprob the engine gave it (``Reply.logprobs``: the unmodified distribution,
temperature 1, on either backend). Before the update, the policy that sampled -- the weights the engine was
synced to -- scores the same rows at temperature 1 (``mara_bench.trainer.learner.logprobs.response_scores``), and the
per-token absolute difference is the gap. A backend whose weights did not sync, whose kernels or dtype differ,
or a rollout whose token ids were re-tokenised shows up here instead of as a silently biased gradient.

Reported each step, over all ranks, for the whole batch and per role (``role/<role>/...``):

* ``rollout/logprob_gap_mean`` -- mean gap over the generated tokens whose engine logprob is known;
* ``rollout/logprob_gap_max`` -- the largest gap;
* ``rollout/logprob_gap_over_tol`` -- share of those tokens whose gap exceeds ``rollout.parity_tolerance``;
* ``rollout/parity_share`` -- the share of the step's rows measured (``rollout.parity_share``, evenly spaced).

With a vLLM engine, ``sync_gap`` also checks every sync directly: right after the policy's weights (or, under
per-role adapters, its adapters) are loaded into the engine, both score a fixed conversation (``SYNC_PROBE``,
through each adapter) and ``rollout/sync_gap_max`` is the largest per-token difference.

``check`` applies ``rollout.parity`` (``warn`` / ``fail``; ``off`` measures nothing; ``auto`` is ``warn`` with
a vLLM engine and ``off`` on the transformers backend, whose engine is the policy's own forward: ``action``):
the batch's mean gap against ``rollout.parity_bound``, the sync gap against ``rollout.parity_tolerance``. The
extra forward costs about one no-grad scoring pass over the measured rows (``time_parity``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import torch

from mara_bench.core.samples import Sample
from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.adapter_rows import adapter_rows
from mara_bench.trainer.config import OptimConfig, RolloutConfig
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.learner.logprobs import response_scores
from mara_bench.trainer.learner.packing import micro_batches
from mara_bench.trainer.learner.shared_prefix import layout_for

logger = logging.getLogger(__name__)

PREFIX = "rollout/logprob_gap"
SYNC_GAP = "rollout/sync_gap_max"
SHARE = "rollout/parity_share"
ALL = ""
"""The role key of the whole batch (its metrics carry no ``role/<role>/`` prefix)."""


class ParityError(RuntimeError):
    """The rollout-trainer logprob gap exceeded its bound under ``rollout.parity: fail``."""


def metric_key(role: str, stat: str) -> str:
    """``rollout/logprob_gap_<stat>`` for the whole batch, ``role/<role>/rollout/logprob_gap_<stat>`` per role."""
    return f"{PREFIX}_{stat}" if role == ALL else f"role/{role}/{PREFIX}_{stat}"


def token_gaps(
    policy: torch.nn.Module, samples: Sequence[Sample], optim: OptimConfig, *, sharded: bool = False
) -> list[torch.Tensor]:
    """Per sample, |engine logprob - trainer logprob| of each generated token whose engine logprob is known
    (an empty tensor for a sample without engine logprobs), scored in ``optim.batching``'s layout (``bucket``
    where ``shared-prefix`` cannot apply; ``sharded``: the policy is FSDP-sharded)."""
    scored = [i for i, s in enumerate(samples) if s.rollout_logprobs is not None]
    gaps = [torch.empty(0) for _ in samples]
    if not scored:
        return gaps
    layout, _ = layout_for(optim.batching, policy, sharded=sharded)
    batches = micro_batches([samples[i] for i in scored], optim.token_budget, layout, optim.max_padding)
    with torch.no_grad():
        for batch in batches:
            flat = response_scores(policy, batch, 1.0).logprobs.float().cpu()
            for row, trainer_logprobs in zip(batch.rows, flat.split(batch.response_lengths), strict=True):
                sample = samples[scored[row]]
                engine = torch.tensor(sample.rollout_logprobs, dtype=torch.float32)
                known = torch.tensor(sample.loss_mask, dtype=torch.bool) & engine.isfinite()
                gaps[scored[row]] = (engine[known] - trainer_logprobs[known]).abs()
    return gaps


def parity_metrics(
    gaps: Sequence[torch.Tensor],
    samples: Sequence[Sample],
    roles: Sequence[str],
    tolerance: float,
    dist: Distributed,
) -> dict[str, float]:
    """The gap's mean, max and share over ``tolerance``, for the batch and each role with known tokens."""
    groups = [ALL, *roles]
    sums, largest = [], []
    for role in groups:
        mine = [g for g, s in zip(gaps, samples, strict=True) if role in (ALL, s.role)]
        joined = torch.cat([torch.empty(0), *mine])
        sums += [float(joined.numel()), float(joined.sum()), float((joined > tolerance).sum())]
        largest.append(float(joined.max()) if joined.numel() else -math.inf)
    sums = dist.sum(sums)
    largest = dist.largest(largest)
    metrics: dict[str, float] = {}
    for index, role in enumerate(groups):
        tokens, total, over = sums[3 * index : 3 * index + 3]
        if tokens:
            metrics[metric_key(role, "mean")] = total / tokens
            metrics[metric_key(role, "max")] = largest[index]
            metrics[metric_key(role, "over_tol")] = over / tokens
    return metrics


SYNC_PROBE = [
    {"role": "user", "content": "What is 3 + 4?"},
    {"role": "assistant", "content": "3 + 4 = 7. The answer is 7."},
]
"""The fixed conversation a synced engine and the trainer both score (``sync_gap``)."""


def sync_gap(
    policy: torch.nn.Module, tokenizer: Any, engine: Any, adapters: Sequence[str] = ()
) -> dict[str, float]:
    """``rollout/sync_gap_max``: the largest |engine - trainer| logprob over ``SYNC_PROBE``'s tokens, the engine
    just synced to ``policy`` (an engine that kept its old weights, or loaded them wrongly, shows here); under
    per-role adapters, the largest over ``adapters``, each scored through that adapter on both sides."""
    ids = render_prompt(tokenizer, SYNC_PROBE, add_generation_prompt=False)
    device = next(policy.parameters()).device
    gaps = []
    for adapter in adapters or [None]:
        engine_logprobs = torch.tensor(engine.score(ids, adapter), dtype=torch.float32)
        routing = adapter_rows(policy, [adapter]) if adapter is not None else nullcontext()
        with torch.no_grad(), routing:
            logits = policy(torch.tensor([ids], device=device)).logits[0, :-1].float()
        tokens = torch.tensor(ids[1:], device=device)[:, None]
        trainer = torch.log_softmax(logits, -1).gather(-1, tokens)[:, 0]
        gaps.append(float((engine_logprobs - trainer.cpu()).abs().max()))
    return {SYNC_GAP: max(gaps)}


def action(rollout: RolloutConfig, own_forward: bool) -> str:
    """``rollout.parity`` with ``auto`` resolved: ``off`` when the engine is the policy's own forward
    (``own_forward``), else ``warn``."""
    if rollout.parity != "auto":
        return rollout.parity
    return "off" if own_forward else "warn"


def measured_rows(count: int, share: float) -> list[int]:
    """The indices of ``share`` of ``count`` rows, evenly spaced (at least one row when there are any)."""
    if count == 0:
        return []
    taken = max(1, round(count * share))
    return sorted({int(i * count / taken) for i in range(taken)})


def check(metrics: dict[str, float], rollout: RolloutConfig, step: int, own_forward: bool = False) -> None:
    """Warn (one printed line) or raise ``ParityError`` when the batch's mean gap exceeds ``parity_bound``."""
    what = action(rollout, own_forward)
    if what == "off":
        return
    mean, synced = metrics.get(metric_key(ALL, "mean")), metrics.get(SYNC_GAP)
    if mean is not None and mean > rollout.parity_bound:
        line = (
            f"step {step}: rollout-trainer logprob gap {mean:.4g} (max {metrics[metric_key(ALL, 'max')]:.4g}) "
            f"exceeds rollout.parity_bound {rollout.parity_bound:g}: the engine's logprobs are not the trained "
            f"policy's (rollout.backend: {rollout.backend})"
        )
    elif synced is not None and synced > rollout.parity_tolerance:
        line = (
            f"step {step}: the synced engine scores a fixed text up to {synced:.4g} away from the trainer's "
            f"forward (rollout.parity_tolerance {rollout.parity_tolerance:g}): its weights are not the policy's"
        )
    else:
        return
    if what == "fail":
        raise ParityError(line)
    logger.warning(line)


def measure(
    policy: torch.nn.Module,
    samples: Sequence[Sample],
    roles: Sequence[str],
    rollout: RolloutConfig,
    optim: OptimConfig,
    dist: Distributed,
    step: int,
    synced: dict[str, float],
    own_forward: bool,
) -> dict[str, float]:
    """This step's parity metrics (every rank calls it) with the sync's (``synced``: ``sync_gap``'s, or empty),
    checked against the recipe's bounds; nothing when the check is off (``action``; ``own_forward``: the engine
    that sampled is the policy's own forward)."""
    if action(rollout, own_forward) == "off":
        return {}
    chosen = [samples[i] for i in measured_rows(len(samples), rollout.parity_share)]
    with dist.gathered(policy):
        gaps = token_gaps(policy, chosen, optim, sharded=dist.sharded)
    rows, total = dist.sum([float(len(chosen)), float(len(samples))])
    metrics = {**synced, **parity_metrics(gaps, chosen, roles, rollout.parity_tolerance, dist)}
    metrics[SHARE] = rows / total if total else 0.0
    check(metrics, rollout, step, own_forward)
    return metrics
