"""M-ASK end to end on the tiny model: after the cold start (SFT on scripted demonstrations of the five agents) one
RL step gives plan, search, summary, update and answer rows with non-zero advantages, and the exported checkpoint
is scored by ``tasks/qa.py`` with the M-ASK system over the same BM25 corpus through ``local/``."""

from __future__ import annotations

import pytest
from _e2e_helpers import assert_every_role_has_signal, score_export, warm_started

from harness.systems.mask import ROLES

CRITIC_STEPS = 10
"""A tenth of the recipe's critic fit: the path runs, the test stays as fast (its signal check needs no baseline)."""


@pytest.mark.slow
def test_all_five_mask_agents_train_after_the_cold_start_and_the_export_is_scored(tmp_path):
    trainer = warm_started("mask-tiny.yaml", tmp_path / "run", critic_steps=CRITIC_STEPS)
    assert_every_role_has_signal(trainer, ROLES)
    score_export(
        trainer,
        "qa.py@bamboogle",
        trainer.task.benchmark_rows()[:2],
        system="mask",
        index=str(trainer.task.index),
        k=2,
        max_iterations=2,
    )
