"""PPO mini-batches: a step's rows cut into consecutive parts, one optimizer step each (verl's
``ppo_mini_batch_size``).

``algorithm.ppo_mini_batch_size`` counts questions over all ranks, as verl counts prompts: a step of
``rollout.prompts_per_step`` questions makes ``prompts_per_step / ppo_mini_batch_size`` optimizer steps per
``ppo_epochs``. Each rank cuts its own rows, in the order they were made (question after question), into that many
consecutive parts of near-equal row counts, so every rank takes the same number of optimizer steps. Each part is
then laid out in token-budget micro-batches (``mara_bench.trainer.learner.packing``) whose ``rows`` index the whole
step's rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mara_bench.core.samples import Sample
from mara_bench.trainer.learner.packing import MicroBatch, micro_batches


def mini_batch_count(prompts_per_step: int, ppo_mini_batch_size: int | None) -> int:
    """Optimizer steps per epoch: ``prompts_per_step / ppo_mini_batch_size`` (the config checks it divides;
    1 when it is unset)."""
    return 1 if ppo_mini_batch_size is None else prompts_per_step // ppo_mini_batch_size


def row_parts(rows: int, parts: int) -> list[range]:
    """``parts`` consecutive ranges covering ``range(rows)``, their sizes differing by at most one (some may be
    empty when there are fewer rows than parts)."""
    bounds = [rows * k // parts for k in range(parts + 1)]
    return [range(bounds[k], bounds[k + 1]) for k in range(parts)]


def mini_batch_layout(
    samples: Sequence[Sample], parts: int, token_budget: int, layout: str, max_padding: float
) -> list[list[MicroBatch]]:
    """Per mini-batch, its micro-batches; their ``rows`` index ``samples``."""
    laid_out = []
    for part in row_parts(len(samples), parts):
        batches = micro_batches([samples[row] for row in part], token_budget, layout, max_padding)
        laid_out.append(
            [dataclasses.replace(batch, rows=[part.start + row for row in batch.rows]) for batch in batches]
        )
    return laid_out
