"""MARS end to end on the tiny model: after the cold start (SFT on scripted dual-system demonstrations) one RL step
gives System 2 and System 1 (its bin-packed tool outputs) rows with non-zero advantages, and the exported checkpoint
is scored by ``tasks/qa.py`` with the MARS system over the same BM25 corpus through ``local/``."""

from __future__ import annotations

import pytest
from _e2e_helpers import assert_every_role_has_signal, score_export, warm_started

from mara_bench.harness.systems.mars import ROLES


@pytest.mark.slow
def test_both_mars_systems_train_after_the_cold_start_and_the_export_is_scored(tmp_path):
    trainer = warm_started("mars-tiny.yaml", tmp_path / "run")
    # episode seeds: the same draws however the threaded searches interleave
    assert_every_role_has_signal(trainer, ROLES)
    score_export(
        trainer,
        "qa.py@bamboogle",
        trainer.task.benchmark_rows()[:2],
        system="mars",
        tools="search",  # the recipe's task serves search alone: the same System-2 prompt
        index=str(trainer.task.index),
        k=2,
        max_turns=3,
        sys1_budget=4096,
    )
