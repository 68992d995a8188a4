"""Per-role training metrics: what each agent of a multi-agent system contributed to one step.

Every step row carries, for each role of the run's system (its own names: ``solver``, ``verifier``,
``corrector``, ``system2``, ``system1``, ``planner``, ``worker``, ``plan``, ``search``, ``summary``, ``update``,
``answer``), the flat keys ``role/<role>/<metric>``:

* ``samples`` -- rows of the role trained this step (over all ranks);
* ``reward_mean`` -- mean reward of those rows;
* ``adv_nonzero_frac`` -- share of those rows with a non-zero advantage on at least one trained token (a role
  whose rows all have zero advantage learns nothing this step);
* ``response_tokens`` -- mean trained (loss-mask) tokens per row;
* ``loss``, ``entropy``, ``clip_frac`` -- the clipped-surrogate loss, the policy entropy and the clipped-token
  share, each a token mean over the role's trained tokens (first PPO epoch).

Sums are kept so that micro-batches and ranks add up: the engine sums each key over micro-batches and ranks and
divides by the role's global token count only once (``token_shares``). A role with no rows this step reports
``samples`` 0 and omits the means (they are undefined, not zero).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.losses import aggregate, policy_loss

SAMPLE_METRICS = ("samples", "reward_mean", "adv_nonzero_frac", "response_tokens")
TOKEN_METRICS = ("loss", "entropy", "clip_frac")


def key(role: str, metric: str) -> str:
    """The flat metrics key ``role/<role>/<metric>``."""
    return f"role/{role}/{metric}"


def has_nonzero_advantage(sample: Sample) -> bool:
    """Whether the row's advantage is non-zero on any trained token (a scalar counts on every trained token)."""
    advantage = sample.advantage
    if advantage is None or not any(sample.loss_mask):
        return False
    if isinstance(advantage, int | float):
        return advantage != 0.0
    return any(a != 0.0 for a, m in zip(advantage, sample.loss_mask, strict=True) if m)


def sample_sums(samples: Sequence[Sample], roles: Sequence[str]) -> list[float]:
    """Per role, in ``roles`` order: [rows, reward sum, rows with a non-zero advantage, trained tokens] -- local
    sums for ``Distributed.sum``; ``sample_metrics`` turns the global sums into the reported values."""
    sums = []
    for role in roles:
        mine = [s for s in samples if s.role == role]
        sums += [
            float(len(mine)),
            sum(s.reward for s in mine),
            float(sum(map(has_nonzero_advantage, mine))),
            float(sum(sum(s.loss_mask) for s in mine)),
        ]
    return sums


def sample_metrics(sums: Sequence[float], roles: Sequence[str]) -> dict[str, float]:
    """The ``samples`` / ``reward_mean`` / ``adv_nonzero_frac`` / ``response_tokens`` keys of every role."""
    metrics: dict[str, float] = {}
    for index, role in enumerate(roles):
        rows, rewards, nonzero, tokens = sums[4 * index : 4 * index + 4]
        metrics[key(role, "samples")] = rows
        if rows:
            metrics[key(role, "reward_mean")] = rewards / rows
            metrics[key(role, "adv_nonzero_frac")] = nonzero / rows
            metrics[key(role, "response_tokens")] = tokens / rows
    return metrics


def role_tokens(samples: Sequence[Sample], roles: Sequence[str]) -> list[float]:
    """Local trained-token count per role (``roles`` order), to be summed over ranks."""
    return [float(sum(sum(s.loss_mask) for s in samples if s.role == role)) for role in roles]


def token_shares(
    roles: Sequence[str],
    row_roles: Tensor,
    mask: Tensor,
    old: Tensor,
    logprob: Tensor,
    advantages: Tensor,
    token_entropy: Tensor,
    global_role_tokens: Sequence[float],
    *,
    clip_low: float,
    clip_high: float,
    dual_clip: float | None,
) -> dict[str, Tensor]:
    """This micro-batch's share of each role's token-mean loss, entropy and clip fraction.

    row_roles: ``(B,)`` index into ``roles`` of each row; mask, old, logprob, token_entropy: ``(B, T)``;
    advantages: ``(B,)`` or ``(B, T)``; ``global_role_tokens``: each role's trained tokens over the whole step
    (all micro-batches and ranks), so the shares of every micro-batch add up to the role's token mean.
    """
    shares: dict[str, Tensor] = {}
    with torch.no_grad():
        for index, role in enumerate(roles):
            tokens = int(global_role_tokens[index])
            role_mask = mask * (row_roles == index).unsqueeze(-1).to(mask.dtype)
            # the same keys on every micro-batch and rank: only a role absent from the whole step is left out
            if tokens == 0:
                continue
            loss, stats = policy_loss(
                old,
                logprob.detach(),
                advantages,
                role_mask,
                clip_low=clip_low,
                clip_high=clip_high,
                dual_clip=dual_clip,
                mode="token-mean",
                global_tokens=tokens,
            )
            shares[key(role, "loss")] = loss
            shares[key(role, "clip_frac")] = stats["clip_frac_high"] + stats["clip_frac_low"]
            shares[key(role, "entropy")] = aggregate(
                token_entropy.detach(), role_mask, "token-mean", global_tokens=tokens
            )
    return shares
