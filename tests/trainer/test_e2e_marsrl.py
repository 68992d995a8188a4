"""MarsRL end to end on the tiny model: after the cold start (SFT on scripted V-C demonstrations) one RL step gives
the Solver, the Verifier and the Corrector rows with non-zero advantages -- over chained and over grouped agentic
rollouts -- and the exported checkpoint is scored by ``tasks/aime.py`` with the V-C system through ``local/``."""

from __future__ import annotations

import pytest
from _e2e_helpers import assert_every_role_has_signal, score_export, warm_started

from mara_bench.harness.systems.vc import ROLES


@pytest.mark.slow
def test_every_vc_agent_trains_after_the_cold_start_and_the_export_is_scored(tmp_path):
    trainer = warm_started("marsrl-tiny.yaml", tmp_path / "run")
    assert_every_role_has_signal(trainer, ROLES)
    score_export(
        trainer,
        "aime.py@aime2025",
        trainer.task.benchmark_rows()[:2],
        system="vc",
        accept_after=1,
        max_iterations=1,
        solver_attempts=1,
    )


@pytest.mark.slow
def test_every_vc_agent_trains_over_grouped_rollouts(tmp_path):
    trainer = warm_started("marsrl-grouped-tiny.yaml", tmp_path / "run")
    assert_every_role_has_signal(trainer, ROLES)
