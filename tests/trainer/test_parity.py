"""The rollout-trainer parity check: per-role gap metrics, the recipe's warn / fail, and a real step on both ends."""

from __future__ import annotations

import copy
import dataclasses
import logging

import pytest
import torch

from mara_bench.core.samples import Sample
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.rollouts.parity import (
    SHARE,
    ParityError,
    action,
    check,
    measured_rows,
    parity_metrics,
)
from mara_bench.trainer.run.engine import Trainer


def _sample(role, n):
    return Sample(
        prompt_ids=[1], response_ids=[5] * n, loss_mask=[1] * n, role=role, rollout_logprobs=[0.0] * n
    )


def test_gap_metrics_for_the_batch_and_each_role():
    samples = [_sample("solver", 3), _sample("verifier", 2), _sample("solver", 1)]
    gaps = [torch.tensor([0.0, 0.1, 0.2]), torch.tensor([0.4, 0.0]), torch.tensor([0.3])]
    metrics = parity_metrics(gaps, samples, ["solver", "verifier", "corrector"], 0.15, Distributed())
    expected = {
        "rollout/logprob_gap_mean": 1.0 / 6,
        "rollout/logprob_gap_max": 0.4,
        "rollout/logprob_gap_over_tol": 3 / 6,
        "role/solver/rollout/logprob_gap_mean": 0.6 / 4,
        "role/solver/rollout/logprob_gap_max": 0.3,
        "role/solver/rollout/logprob_gap_over_tol": 2 / 4,
        "role/verifier/rollout/logprob_gap_mean": 0.2,
        "role/verifier/rollout/logprob_gap_max": 0.4,
        "role/verifier/rollout/logprob_gap_over_tol": 1 / 2,
    }  # a role without tokens (corrector) reports nothing: its gap is undefined, not zero
    assert metrics.keys() == expected.keys()
    for key, value in expected.items():
        assert metrics[key] == pytest.approx(value, abs=1e-6), key


def test_bound_warns_or_fails_as_the_recipe_says(toy_config, caplog):
    metrics = {"rollout/logprob_gap_mean": 0.5, "rollout/logprob_gap_max": 2.0}
    warn = dataclasses.replace(toy_config.rollout, parity="warn", parity_bound=0.1)
    with caplog.at_level(logging.WARNING, logger="mara_bench.trainer"):
        check(metrics, warn, step=3)
        [warning] = caplog.records
        assert warning.levelno == logging.WARNING and warning.getMessage().startswith(
            "step 3: rollout-trainer logprob gap 0.5 (max 2) exceeds rollout.parity_bound 0.1"
        )
        caplog.clear()
        with pytest.raises(ParityError, match="exceeds rollout.parity_bound 0.1"):
            check(metrics, dataclasses.replace(warn, parity="fail"), step=3)
        check(metrics, dataclasses.replace(warn, parity="off"), step=3)
        check(
            metrics, dataclasses.replace(warn, parity="fail", parity_bound=0.5), step=3
        )  # at the bound: fine
        assert caplog.records == []


def _toy(toy_config, **rollout):
    return dataclasses.replace(
        toy_config, rollout=dataclasses.replace(toy_config.rollout, scheduler="static", **rollout)
    )


def test_auto_checks_only_an_engine_that_is_not_the_policys_own_forward(toy_config):
    auto = toy_config.rollout
    assert auto.parity == "auto"
    assert action(auto, own_forward=True) == "off"
    assert action(auto, own_forward=False) == "warn"
    assert action(dataclasses.replace(auto, parity="fail"), own_forward=True) == "fail"


def test_the_measured_rows_are_an_even_share_and_at_least_one():
    assert measured_rows(8, 0.25) == [0, 4]
    assert measured_rows(3, 0.1) == [0]
    assert measured_rows(5, 1.0) == [0, 1, 2, 3, 4]
    assert measured_rows(0, 0.5) == []


def test_a_default_step_on_the_transformers_engine_spends_no_forward_on_parity(toy_config, tmp_path):
    metrics = Trainer(_toy(toy_config), tmp_path).train_step()
    assert not [key for key in metrics if "logprob_gap" in key or key == SHARE]


def test_a_step_on_the_transformers_engine_reports_a_gap_near_zero(toy_config, tmp_path):
    trainer = Trainer(_toy(toy_config, parity="fail", parity_bound=1e-4, parity_share=0.5), tmp_path)
    metrics = trainer.train_step()
    rows = len(trainer.last_rewarded)
    assert metrics[SHARE] == pytest.approx(len(measured_rows(rows, 0.5)) / rows)
    assert metrics["rollout/logprob_gap_mean"] < 1e-5
    assert metrics["rollout/logprob_gap_max"] < 1e-4 and metrics["rollout/logprob_gap_over_tol"] == 0.0
    [role] = trainer.roles
    assert metrics[f"role/{role}/rollout/logprob_gap_mean"] == metrics["rollout/logprob_gap_mean"]


def test_an_engine_on_other_weights_fails_the_step(toy_config, tmp_path):
    trainer = Trainer(_toy(toy_config, parity="fail"), tmp_path)
    stale = copy.deepcopy(trainer.policy)  # the weights an engine that did not sync would sample with
    with torch.no_grad():
        for parameter in stale.parameters():
            parameter.add_(0.5 * torch.randn_like(parameter))
    trainer.rollout.chat.model = stale
    with pytest.raises(
        ParityError, match=r"step 0: rollout-trainer logprob gap [0-9.]+ \(max [0-9.]+\) exceeds"
    ):
        trainer.train_step()
