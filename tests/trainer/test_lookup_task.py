"""The look-up task's toolbox: a recipe picks the tools it serves, so a system's training prompt lists the same tools
as its evaluation (an export fitted to one tool list writes broken calls under another)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mara_bench.harness.systems import mars
from mara_bench.trainer.config import load_config
from mara_bench.trainer.rollouts.rollout import training_task
from mara_bench.trainer.tasks.lookup import TOOLS, lookup_task

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"


def test_the_toolbox_serves_the_tools_asked_for():
    assert lookup_task(n_prompts=1).toolbox.names() == sorted(TOOLS)
    assert lookup_task(n_prompts=1, tools=["search"]).toolbox.names() == ["search"]


@pytest.mark.parametrize("tools", [[], ["search", "browse"]])
def test_tools_outside_the_corpus_tools_are_refused(tools):
    with pytest.raises(ValueError, match="non-empty subset of search, retrieve"):
        lookup_task(n_prompts=1, tools=tools)


@pytest.mark.parametrize("recipe", ["mars-tiny.yaml", "mars-learn.yaml"])
def test_the_mars_recipes_offer_system2_only_tools_its_evaluation_can_offer(recipe):
    config = load_config(RECIPES / recipe)
    offered = training_task(config.task).toolbox.names()
    assert offered and set(offered) <= set(mars.TOOLS), offered
    evaluated = [tool for tool in mars.TOOLS if tool in offered]  # -T tools=<the same subset>
    assert mars.system2_prompt(offered, "compact") == mars.system2_prompt(evaluated, "compact")
