"""The trainer's plug-in points: ``algorithm.advantage`` and ``algorithm.policy_loss`` name entries of
``mara_bench.trainer.registry.ADVANTAGE_ESTIMATORS`` and ``mara_bench.trainer.registry.POLICY_LOSSES``; the engine calls what the
recipe names, and an unknown name is refused when the recipe is loaded."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch
import yaml

from mara_bench.trainer.algorithms.estimators import TokenAdvantages
from mara_bench.trainer.algorithms.losses import policy_loss
from mara_bench.trainer.config import ConfigError, load_config, to_dict
from mara_bench.trainer.registry import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, Named, NamedEstimator
from mara_bench.trainer.run.engine import Trainer


def recipe(tmp_path, config, **algorithm):
    """``config`` with ``algorithm`` settings, written as a YAML recipe and loaded as a user's would be."""
    data = to_dict(config)
    data["algorithm"].update(algorithm)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


@pytest.mark.parametrize(
    ("advantage", "loss"), list(itertools.product(sorted(ADVANTAGE_ESTIMATORS), sorted(POLICY_LOSSES)))
)
def test_a_recipe_naming_each_estimator_and_loss_trains_a_step(toy_config, tmp_path, advantage, loss):
    config = recipe(tmp_path, toy_config, advantage=advantage, policy_loss=loss)
    trainer = Trainer(config, tmp_path / "run")
    assert (trainer.critic is not None) == ADVANTAGE_ESTIMATORS[advantage].needs_critic
    metrics = trainer.train_step()
    assert metrics["skipped"] == 0.0 and math.isfinite(metrics["loss"])


def test_the_engine_calls_the_estimator_and_the_loss_the_recipe_names(toy_config, tmp_path, monkeypatch):
    def constant(batch):
        for sample in batch.samples:
            sample.advantage = 0.5
        return TokenAdvantages([0.5 * mask for mask in batch.masks], None)

    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs["mode"])
        return policy_loss(*args, **kwargs)

    monkeypatch.setitem(ADVANTAGE_ESTIMATORS, "constant", NamedEstimator(constant))
    monkeypatch.setitem(POLICY_LOSSES, "counted", Named(counted))
    config = recipe(tmp_path, toy_config, advantage="constant", policy_loss="counted")
    trainer = Trainer(config, tmp_path / "run")
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = trainer.train_step()
    assert metrics["advantage_mean"] == pytest.approx(0.5) and metrics["advantage_std"] == pytest.approx(0.0)
    assert calls and set(calls) == {"token-mean"}  # once per micro-batch, with the recipe's aggregation
    assert all(s.advantage == 0.5 for s in trainer.last_samples)
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.policy.parameters(), strict=True))


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"advantage": "rloo"}, "algorithm.advantage: unknown advantage estimator 'rloo'; valid: gae, grpo"),
        (
            {"policy_loss": "ppo2"},
            "algorithm.policy_loss: unknown policy loss 'ppo2'; valid: ppo; did you mean 'ppo'?",
        ),
    ],
)
def test_an_unknown_name_is_refused_at_load_with_the_valid_names(toy_config, tmp_path, setting, message):
    with pytest.raises(ConfigError) as error:
        recipe(tmp_path, toy_config, **setting)
    assert str(error.value) == f"{tmp_path / 'recipe.yaml'}: {message}"
    with pytest.raises(ConfigError, match="unknown"):  # building a config in code runs the same check
        dataclasses.replace(toy_config.algorithm, **setting)
