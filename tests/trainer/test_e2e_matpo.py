"""MATPO end to end on the tiny model: after the cold start (SFT on scripted planner/worker demonstrations) one RL
step gives the planner and its workers rows with non-zero advantages, and the exported checkpoint is scored by
``tasks/qa.py`` with the MATPO system over the same BM25 corpus through ``local/``."""

from __future__ import annotations

import pytest
from _e2e_helpers import assert_every_role_has_signal, score_export, warm_started

from mara_bench.harness.systems.matpo import ROLES

COLD_START_STEPS = 30
"""A quarter of the recipe's cold start: enough for planner and worker rows with a signal (what this test checks),
not for the intact tool calls a learning run needs (``benchmarks/bench_learning.py``)."""


@pytest.mark.slow
def test_planner_and_worker_train_after_the_cold_start_and_the_export_is_scored(tmp_path):
    trainer = warm_started("matpo-tiny.yaml", tmp_path / "run", steps=COLD_START_STEPS)
    assert_every_role_has_signal(trainer, ROLES)
    score_export(
        trainer,
        "qa.py@bamboogle",
        trainer.task.benchmark_rows()[:2],
        system="matpo",
        index=str(trainer.task.index),
        k=2,
        max_turns=2,
        worker_max_turns=2,
    )
