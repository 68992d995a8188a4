"""MARS (arXiv:2510.04935 §3.2.2-3.2.3, appendix C.3-C.5): dual-system GRPO for ``mara_bench.harness.systems.mars``.

* Reward (eq. 8, C.3): the trajectory's outcome (``task.reward``: 1 when the judge calls the ``<answer>`` correct,
  else 0), shared by the trajectory's System-2 sample and all its System-1 samples.
* Samples (§3.2.3): System 2's whole multi-turn conversation is ONE sample whose tool responses -- the System-1
  distillates -- are user turns, so they are out of its loss mask; each System-1 call (one bin-packed chunk and
  its distillate) is one sample.
* Advantages (eq. 5): normalised within the question's G System-2 samples and, separately, within its M System-1
  samples (group keys ``<question>/system2`` and ``<question>/system1``).
* Balanced sampling (§3.2.2): AFTER the advantages, the System-1 samples are randomly down-sampled (M > G) or
  duplicated (M < G) to exactly G (``mara_bench.trainer.algorithms.advantages.resample_to``). A question whose G
  trajectories made no System-1 call has no System-1 rows to draw from and trains System 2 alone.
* Objective (eq. 6-7): L = L_sys2 + L_sys1, both GRPO on the same batch (the recipe's loss settings; eq. 9 is the
  per-sequence token mean, ``seq-mean-token-mean``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.harness.systems.mars import SYSTEM1, SYSTEM2
from mara_bench.trainer.algorithms.advantages import GroupNorm, group_advantages, resample_to
from mara_bench.trainer.methods.base import (
    Method,
    concatenate,
    lead_then_helpers,
    role_group,
)
from mara_bench.trainer.samples import samples_from_episode


def trajectory_samples(item: dict[str, Any], episode: Episode, reward: float, tokenizer: Any) -> list[Sample]:
    """The trajectory's System-2 sample first, then its System-1 samples (parent: the System-2 row), all
    carrying the trajectory reward (eq. 8) and grouped per system within the question."""
    samples = samples_from_episode(episode, tokenizer, reward=reward)
    ordered = lead_then_helpers(samples, SYSTEM2, SYSTEM1, system="mars")
    for sample in ordered:
        sample.group_key = role_group(item, sample.role)
    return ordered


def rewarded_samples(
    item: dict[str, Any], episodes: list[Episode], task: Any, tokenizer: Any
) -> list[Sample]:
    return concatenate(
        [
            trajectory_samples(item, episode, float(task.reward(item, episode)), tokenizer)
            for episode in episodes
        ]
    )


def system_advantages(samples: list[Sample], norm: GroupNorm) -> None:
    """Eq. 5: GRPO advantages within each system's rows of the question (their group keys differ by system)."""
    for sample, advantage in zip(samples, group_advantages(samples, norm).tolist(), strict=True):
        sample.advantage = advantage


def balanced_samples(samples: list[Sample]) -> list[Sample]:
    """§3.2.2: the G System-2 rows, then exactly G System-1 rows drawn from the M there are (each a copy whose
    ``parent`` points at its System-2 row's new position)."""
    system2 = [i for i, s in enumerate(samples) if s.role == SYSTEM2]
    system1 = [i for i, s in enumerate(samples) if s.role == SYSTEM1]
    position = {old: new for new, old in enumerate(system2)}
    chosen = resample_to(system1, len(system2)).tolist() if system1 else []
    return [samples[i] for i in system2] + [
        dataclasses.replace(samples[i], parent=position[samples[i].parent]) for i in chosen
    ]


def advantages(samples: list[Sample], norm: GroupNorm) -> list[Sample]:
    """Advantages pre-computed over ALL samples (eq. 5), then the System-1 rows balanced to G (§3.2.2)."""
    system_advantages(samples, norm)
    return balanced_samples(samples)


METHOD = Method(name="mars", rewarded_samples=rewarded_samples, estimator="grpo", advantages=advantages)
