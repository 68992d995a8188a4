"""The shipped method recipes parse, pair each method with its paper's system and the estimator it needs, and
keep a context long enough for the verbatim prompts; plain GRPO stays the default method."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mara_bench.trainer.config import AlgorithmConfig, load_config
from mara_bench.trainer.methods import get_method

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"


@pytest.mark.parametrize(
    ("name", "system", "advantage"),
    [("marsrl", "vc", "grpo"), ("mars", "mars", "grpo"), ("matpo", "matpo", "grpo"), ("mask", "mask", "gae")],
)
def test_method_recipe_pairs_method_system_and_estimator(name, system, advantage):
    config = load_config(RECIPES / f"{name}-tiny.yaml")
    assert (config.algorithm.method, config.task.system, config.algorithm.advantage) == (
        name,
        system,
        advantage,
    )
    assert get_method(name).estimator == advantage
    assert config.model.path is None


def test_mask_recipe_uses_the_papers_gae_settings_and_answers_every_turn():
    config = load_config(RECIPES / "mask-tiny.yaml")
    assert (config.algorithm.gamma, config.algorithm.lam) == (1.0, 1.0)
    assert config.task.system_options["answer_every_turn"] is True


def test_mask_released_recipe_is_mask_tiny_with_the_released_codes_two_switches_on_and_a_short_cold_start():
    tiny, released = load_config(RECIPES / "mask-tiny.yaml"), load_config(RECIPES / "mask-released-tiny.yaml")
    assert (tiny.algorithm.mask.format_penalty, tiny.task.system_options.get("plan_reset")) == (False, None)
    reset = {**tiny.task.system_options, "plan_reset": True}
    assert released.task == dataclasses.replace(tiny.task, system_options=reset)
    penalty = dataclasses.replace(tiny.algorithm.mask, format_penalty=True)
    assert released.algorithm == dataclasses.replace(tiny.algorithm, mask=penalty)
    # and a shorter cold start (its header says why)
    short = dataclasses.replace(tiny.warmup, steps=80, critic_steps=20)
    assert released.warmup == short
    assert dataclasses.replace(released, task=tiny.task, algorithm=tiny.algorithm, warmup=tiny.warmup) == tiny


def test_plain_grpo_is_the_default_method():
    assert (
        AlgorithmConfig().method == "grpo"
        and load_config(RECIPES / "grpo-toy.yaml").algorithm.method == "grpo"
    )


def generated(tiny, learn) -> dict:
    """The tiny recipe's task arguments on generated countries, one fresh country per question of the run and 16
    held out (the learning recipes' task)."""
    fresh = learn.steps * learn.rollout.prompts_per_step
    return {**tiny.task.args, "n_prompts": fresh, "generated": True, "heldout_prompts": 16}


def test_mask_learning_recipe_trains_mask_tinys_system_on_a_fresh_country_each_question():
    tiny, learn = load_config(RECIPES / "mask-tiny.yaml"), load_config(RECIPES / "mask-learn.yaml")
    compact = {**tiny.task.system_options, "prompts": "compact"}  # our short prompts, not the paper's
    task = dataclasses.replace(tiny.task, system_options=compact, args=generated(tiny, learn))
    assert learn.task == task and learn.model == tiny.model
    assert learn.rollout.group_size == 4
    # its header's levers, and nothing else, set it apart from mask-tiny's method, optimiser and cold start
    levers = {"gae_whiten": False, "filter_zero_variance": True, "kl_coef": 0.05}
    assert learn.algorithm == dataclasses.replace(tiny.algorithm, **levers)
    assert learn.optim == dataclasses.replace(tiny.optim, lr=3e-4)
    assert learn.rollout.temperature == 0.5
    odds = {"plan": 0.0, "search": 0.5}
    assert learn.warmup == dataclasses.replace(tiny.warmup, steps=300, demos_per_item=1, demo_skills=odds)


def test_mars_learning_recipe_trains_mars_tinys_system_on_a_fresh_country_each_question():
    tiny, learn = load_config(RECIPES / "mars-tiny.yaml"), load_config(RECIPES / "mars-learn.yaml")
    compact = {**tiny.task.system_options, "prompts": "compact"}  # our short prompts, not the paper's
    task = dataclasses.replace(tiny.task, system_options=compact, args=generated(tiny, learn))
    assert learn.task == task and learn.model == tiny.model
    # its header's levers, and nothing else, set it apart from mars-tiny's method, optimiser and cold start
    assert learn.algorithm == dataclasses.replace(tiny.algorithm, kl_coef=0.1)
    assert learn.optim == tiny.optim
    assert (learn.rollout.temperature, learn.rollout.group_size) == (0.8, 8)
    odds = {"system1": 0.6, "system2": 1.0}
    assert learn.warmup == dataclasses.replace(tiny.warmup, demos_per_item=1, demo_skills=odds)
