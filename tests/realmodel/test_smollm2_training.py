"""One RL step of each method on SmolLM2-135M: each recipe's system runs on the real model, the update is finite,
and the rollout engine's logprobs equal the trainer's forward (parity within the recipe's bound)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mara_bench.trainer.config import load_config, replace, to_dict
from mara_bench.trainer.run.engine import Trainer

pytestmark = pytest.mark.realmodel

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"
TURN_CAPS = {"max_iterations", "max_turns", "worker_max_turns"}


def smollm2_step_config(recipe: str):
    """``recipe`` on SmolLM2, cut to one small step: no cold start, one question, two samples, short replies, one
    turn or iteration of the system, every row trained (two samples of the untrained model often earn the same
    reward, which ``filter_zero_variance`` would drop)."""
    config = load_config(RECIPES / recipe)
    data = to_dict(config)
    options = data["task"]["system_options"]
    data["task"] = {
        **data["task"],
        "system_options": {**options, **dict.fromkeys(TURN_CAPS & set(options), 1)},
    }
    data["model"] = {**data["model"], "path": "smollm2-135m"}
    data["warmup"] = {"steps": 0}
    data["eval"] = {**data["eval"], "every": 0}
    data["algorithm"] = {**data["algorithm"], "filter_zero_variance": False}
    data["rollout"] = {
        **data["rollout"],
        "prompts_per_step": 1,
        "group_size": 2,
        "max_tokens": 12,
        "parity": "fail",
        "parity_share": 1.0,
    }
    return replace(
        config,
        "smollm2 test",
        **{key: data[key] for key in ("model", "task", "warmup", "eval", "rollout", "algorithm")},
    )


@pytest.mark.parametrize(
    "recipe",
    [
        "marsrl-verifier-smollm2.yaml",
        "matpo-smollm2.yaml",
        "mask-smollm2.yaml",
        "mars-smollm2.yaml",
        "grpo-toy.yaml",
    ],
)
def test_one_rl_step_on_smollm2_with_parity_in_bounds(smollm2, tmp_path, recipe):
    config = smollm2_step_config(recipe)
    trainer = Trainer(config, tmp_path / "run")
    metrics = trainer.train_step()
    assert trainer.last_samples, "the step made no training rows"
    assert all(math.isfinite(value) for value in metrics.values() if isinstance(value, float))
    assert metrics["rollout/logprob_gap_mean"] <= config.rollout.parity_bound
    assert metrics["rollout/logprob_gap_over_tol"] == 0.0
