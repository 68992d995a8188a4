"""The same-compute supervised control arm of benchmarks/bench_learning.py: it trains the policy from the cold-start
weights on the run's demonstrations for at least the given CPU seconds, and is scored on the same held-out draws
as the RL arm (restoring the cold-start weights gives back the cold-start figures exactly)."""

import json

import torch
from _e2e_helpers import LOOKUP_RUN

from benchmarks.bench_learning import learning_run, supervised_control
from mara_bench.trainer.config import load_config
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.heldout import heldout_metrics

RECIPE = LOOKUP_RUN + "warmup: {{steps: 2, batch_size: 2}}\n"  # a short cold start to go back to


def test_the_control_arm_moves_the_cold_start_weights_and_is_scored_on_the_same_draws(
    tiny_model_dir, tmp_path
):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE.format(model=tiny_model_dir))
    trainer = Trainer(load_config(recipe), tmp_path / "run")
    trainer.warm_up()
    before = heldout_metrics(trainer.evaluation)
    cold_start = {name: value.detach().clone() for name, value in trainer.policy.state_dict().items()}

    arm = supervised_control(trainer, cpu_budget=0.0)

    assert arm.steps == 1 and arm.cpu_seconds > 0
    assert set(arm.heldout) == set(before)
    moved = trainer.policy.state_dict()
    assert any(not torch.equal(moved[name], value) for name, value in cold_start.items())
    trainer.policy.load_state_dict(cold_start)
    assert heldout_metrics(trainer.evaluation) == before


def test_a_learning_run_with_control_records_both_arms_and_the_curves(tiny_model_dir, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(RECIPE.format(model=tiny_model_dir))
    run = learning_run(str(recipe), tmp_path / "run", steps=1, control=True)

    assert run.control is not None and run.rl_cpu_seconds > 0
    assert run.control.cpu_seconds >= run.rl_cpu_seconds  # it stops once it has spent the RL steps' CPU time
    recorded = json.loads((tmp_path / "run" / "control.json").read_text())
    assert recorded["steps"] == run.control.steps and recorded["rl_cpu_seconds"] == run.rl_cpu_seconds
    assert set(run.control.heldout) == set(run.heldout_before) == set(run.steps[-1].heldout)
    assert (tmp_path / "run" / "curves.png").stat().st_size > 0


def test_a_roles_signal_is_counted_on_its_trained_rows():
    from types import SimpleNamespace

    from benchmarks.bench_learning import step_role_stats
    from mara_bench.core.samples import Sample

    def row(role: str, reward: float, advantage: float | None = None) -> Sample:
        return Sample([1], [2, 3], [1, 1], role=role, reward=reward, advantage=advantage)

    rewarded = [row("planner", 1.0), row("planner", 0.0), row("worker", 0.0), row("worker", 0.0)]
    trained = [row("planner", 1.0, 0.7), row("planner", 0.0, -0.7)]  # the worker's group had no variance
    stats = step_role_stats(SimpleNamespace(last_rewarded=rewarded, last_samples=trained))
    assert stats["planner"] == {"samples": 2, "reward_mean": 0.5, "nonzero_advantage": 2}
    assert stats["worker"] == {"samples": 2, "reward_mean": 0.0, "nonzero_advantage": 0}
