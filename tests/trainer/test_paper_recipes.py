"""The paper-scale recipes (trainer/recipes/<method>-paper.yaml) hold the values their sources give: the authors'
released training scripts for MATPO and M-ASK, the papers' own text for MARS and MarsRL (no training script is
released). Each value is recorded with its repository, commit, file and line in trainer/recipes/sources/<method>.yaml
and compared here with the recipe; the recipes also load and are consistent (method, system, estimator, system
options). They cannot run here: 7B-30B models, GPUs, search APIs and graders."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mara_bench.harness.systems import get_system
from mara_bench.trainer.config import load_config, to_dict
from mara_bench.trainer.methods import get_method

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"
SOURCES = RECIPES / "sources"
METHODS = ("mars", "marsrl", "matpo", "mask")
SYSTEMS = {"mars": "mars", "marsrl": "vc", "matpo": "matpo", "mask": "mask"}


def source_record(method: str) -> dict[str, Any]:
    return yaml.safe_load((SOURCES / f"{method}.yaml").read_text())


def recipe_value(recipe: dict[str, Any], key: str) -> Any:
    """The recipe's value at dotted ``key`` (``task.limit.triviaqa``: a mapping's entry)."""
    value: Any = recipe
    for part in key.split("."):
        value = value[part]
    return value


@pytest.mark.parametrize("method", METHODS)
def test_every_recorded_value_cites_its_source_file_commit_and_line(method):
    record = source_record(method)
    assert record["recipe"] == f"{method}-paper.yaml"
    source = record["source"]
    if "repo" in source:  # a released script: the commit it was read at
        assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]) and source["path"]
    else:  # the paper's plain-text extraction, named by its file
        assert re.fullmatch(r"\d{3}_[0-9a-f]{16}\.txt", source["path"])
    assert record["values"]
    for entry in record["values"]:
        assert isinstance(entry["line"], int) and entry["line"] > 0, entry
        if "commit" in entry:  # read in another file at another commit than the source's
            assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]) and entry["path"], entry
        assert "text" in entry, entry
        assert entry["key"] is not None or entry.get("note"), (
            f"{entry}: a value the recipe leaves out says why"
        )


@pytest.mark.parametrize("method", METHODS)
def test_the_recipe_holds_every_value_of_its_source(method):
    recipe = to_dict(load_config(RECIPES / f"{method}-paper.yaml"))
    keyed = [entry for entry in source_record(method)["values"] if entry["key"] is not None]
    assert keyed
    for entry in keyed:
        assert recipe_value(recipe, entry["key"]) == entry["value"], (
            f"{method}-paper.yaml {entry['key']}: {recipe_value(recipe, entry['key'])!r}, but the source says "
            f"{entry['value']!r} ({entry.get('path', source_record(method)['source']['path'])} line {entry['line']})"
        )


def test_the_released_scripts_values_where_they_differ_from_earlier_guesses():
    matpo, mask = source_record("matpo"), source_record("mask")
    by_key = {
        m: {e["key"]: e["value"] for e in r["values"] if e["key"]}
        for m, r in (("matpo", matpo), ("mask", mask))
    }
    assert (by_key["matpo"]["rollout.prompts_per_step"], by_key["matpo"]["optim.lr"]) == (256, 1e-5)
    assert by_key["matpo"]["algorithm.kl_coef"] == 0.0
    assert (by_key["mask"]["rollout.prompts_per_step"], by_key["mask"]["optim.lr"]) == (128, 2e-7)
    assert (by_key["mask"]["algorithm.critic_lr"], by_key["mask"]["algorithm.ppo_mini_batch_size"]) == (
        1e-5,
        32,
    )


def test_mask_paper_recipe_runs_the_released_codes_format_penalty_and_plan_reset():
    released = {
        e["key"]: (e["value"], e["path"], e["line"], e["text"])
        for e in source_record("mask")["values"]
        if "commit" in e
    }
    trainer = "verl/trainer/ppo/ray_trainer.py"
    assert released == {
        "algorithm.mask.format_penalty": (
            True,
            trainer,
            1306,
            'penalty_in_metrics = 0.0 if memory["is_legal_format"] else -1.0',
        ),
        "task.system_options.plan_reset": (
            True,
            trainer,
            1324,
            '"t1": {"question": question, "answer": init_answer}',
        ),
    }
    config = load_config(RECIPES / "mask-paper.yaml")
    assert config.algorithm.mask.format_penalty and config.task.system_options["plan_reset"] is True


def test_marsrl_lists_what_its_text_does_not_recover():
    lost = [e for e in source_record("marsrl")["values"] if e["key"] is None and e["value"] is None]
    notes = " ".join(e["note"] for e in lost)
    for what in ("learning rate", "top-p", "training set", "number of steps"):
        assert what in notes


@pytest.mark.parametrize("method", METHODS)
def test_paper_recipe_loads_and_is_consistent(method):
    config = load_config(RECIPES / f"{method}-paper.yaml")
    assert (config.algorithm.method, config.task.system) == (method, SYSTEMS[method])
    assert get_method(method).estimator == config.algorithm.advantage
    get_system(config.task.system).setup(config.task.system_options)  # raises on an unknown option
    assert config.task.benchmark is not None  # trained on a harness benchmark, judged by the scoring code
    if get_method(method).rollout is not None:
        get_method(method).rollout(
            config.algorithm, config.task, config.rollout
        )  # the method's own checks of its rollout settings
