"""Rollout-trainer parity: do the logprobs the generation engine reported equal the trainer's own forward pass?

Every generated token carries the logprob the engine gave it (``Reply.logprobs``: the unmodified distribution,
temperature 1, on either backend). Before the update, the policy that sampled -- the weights the engine was
synced to -- scores the same rows at temperature 1 (``trainer.logprobs.response_scores``), and the per-token
absolute difference is the gap. A backend whose weights did not sync, whose kernels or dtype differ, or a
rollout whose token ids were re-tokenised shows up here instead of as a silently biased gradient.

Reported each step, over all ranks, for the whole batch and per role (``role/<role>/...``):

* ``rollout/logprob_gap_mean`` -- mean gap over the generated tokens whose engine logprob is known;
* ``rollout/logprob_gap_max`` -- the largest gap;
* ``rollout/logprob_gap_over_tol`` -- share of those tokens whose gap exceeds ``rollout.parity_tolerance``.

``check`` applies ``rollout.parity`` (``warn`` / ``fail`` / ``off``) to the whole batch's mean against
``rollout.parity_bound``. The extra forward costs about one no-grad scoring pass over the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from trainer.config import OptimConfig, RolloutConfig
from trainer.distributed import Distributed
from trainer.logprobs import response_scores
from trainer.packing import micro_batches
from trainer.samples import Sample

PREFIX = "rollout/logprob_gap"
ALL = ""
"""The role key of the whole batch (its metrics carry no ``role/<role>/`` prefix)."""


class ParityError(RuntimeError):
    """The rollout-trainer logprob gap exceeded its bound under ``rollout.parity: fail``."""


def metric_key(role: str, stat: str) -> str:
    """``rollout/logprob_gap_<stat>`` for the whole batch, ``role/<role>/rollout/logprob_gap_<stat>`` per role."""
    return f"{PREFIX}_{stat}" if role == ALL else f"role/{role}/{PREFIX}_{stat}"


def token_gaps(policy: torch.nn.Module, samples: Sequence[Sample], optim: OptimConfig) -> list[torch.Tensor]:
    """Per sample, |engine logprob - trainer logprob| of each generated token whose engine logprob is known
    (an empty tensor for a sample without engine logprobs)."""
    scored = [i for i, s in enumerate(samples) if s.rollout_logprobs is not None]
    gaps = [torch.empty(0) for _ in samples]
    if not scored:
        return gaps
    batches = micro_batches(
        [samples[i] for i in scored], optim.token_budget, optim.batching, optim.max_padding
    )
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


def check(metrics: dict[str, float], rollout: RolloutConfig, step: int) -> None:
    """Warn (one printed line) or raise ``ParityError`` when the batch's mean gap exceeds ``parity_bound``."""
    mean = metrics.get(metric_key(ALL, "mean"))
    if rollout.parity == "off" or mean is None or mean <= rollout.parity_bound:
        return
    line = (
        f"step {step}: rollout-trainer logprob gap {mean:.4g} (max {metrics[metric_key(ALL, 'max')]:.4g}) exceeds "
        f"rollout.parity_bound {rollout.parity_bound:g}: the engine's logprobs are not the trained policy's "
        f"(rollout.backend: {rollout.backend})"
    )
    if rollout.parity == "fail":
        raise ParityError(line)
    print(f"warning: {line}")


def measure(
    policy: torch.nn.Module,
    samples: Sequence[Sample],
    roles: Sequence[str],
    rollout: RolloutConfig,
    optim: OptimConfig,
    dist: Distributed,
    step: int,
) -> dict[str, float]:
    """This step's parity metrics (every rank calls it), checked against the recipe's bound."""
    with dist.gathered(policy):
        gaps = token_gaps(policy, samples, optim)
    metrics = parity_metrics(gaps, samples, roles, rollout.parity_tolerance, dist)
    check(metrics, rollout, step)
    return metrics
