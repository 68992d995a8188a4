"""M-ASK end to end on the tiny model, one cold start (SFT on scripted demonstrations of the five agents) shared by
both tests: a ``mara train`` run from the warm policy reports every agent's metrics and per-token advantages, and
RL steps give plan, search, summary, update and answer rows with non-zero advantages, the exported checkpoint
scored by ``tasks/qa.py`` with the M-ASK system over the same BM25 corpus through ``local/``."""

from __future__ import annotations

import json

import pytest
import yaml
from _e2e_helpers import ROOT, assert_every_role_has_signal, score_export, warm_started
from test_train_run_metrics import ROLE_KEYS, mara_train

from mara_bench.harness.systems.mask import ROLES
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.metrics import read_metrics

COLD_START = {"steps": 100, "critic_steps": 10}
"""A quarter of mask-tiny's cold start and a tenth of its critic fit: enough for all five agents to write their
formats (search, summary and update rows in the first RL step), what these tests check; not the answer copying
a learning run needs (the recipe's 400 steps). After 10 steps the search agent never emits a query, so no
summary or update row follows."""


@pytest.fixture(scope="module")
def warm_trainer(tmp_path_factory) -> Trainer:
    """mask-tiny's trainer after the shortened cold start; the first test saves its policy, the second trains it."""
    return warm_started("mask-tiny.yaml", tmp_path_factory.mktemp("mask") / "run", **COLD_START)


@pytest.mark.slow
def test_mask_recipe_run_from_the_warm_policy_reports_each_of_its_roles(warm_trainer, tmp_path):
    warm_trainer.policy.save_pretrained(tmp_path / "warm")
    warm_trainer.tokenizer.save_pretrained(tmp_path / "warm")
    recipe = yaml.safe_load((ROOT / "trainer" / "recipes" / "mask-tiny.yaml").read_text())
    recipe["model"]["path"], recipe["warmup"]["steps"] = str(tmp_path / "warm"), 0
    (tmp_path / "mask-tiny.yaml").write_text(yaml.safe_dump(recipe))
    run = tmp_path / "run"
    mara_train(tmp_path / "mask-tiny.yaml", run, "--steps", "1")
    [record] = read_metrics(run)
    assert all(record[f"role/{role}/samples"] > 0 for role in ROLES), record
    assert record["role/plan/samples"] == 4 and record["role/answer/samples"] >= 4
    assert {f"role/plan/{key}" for key in ROLE_KEYS} <= set(record)
    [question, _] = [
        json.loads(line) for line in (run / "rollouts" / "step_0.jsonl").read_text().splitlines()
    ]
    assert {s["role"] for s in question["samples"]} >= {"plan", "answer"}
    assert all(isinstance(s["advantage"], list) for s in question["samples"])  # GAE: one value per token


@pytest.mark.slow
def test_all_five_mask_agents_train_after_the_cold_start_and_the_export_is_scored(warm_trainer):
    assert_every_role_has_signal(warm_trainer, ROLES)
    score_export(
        warm_trainer,
        "qa.py@bamboogle",
        warm_trainer.task.benchmark_rows()[:2],
        system="mask",
        index=str(warm_trainer.task.index),
        k=2,
        max_iterations=2,
    )
