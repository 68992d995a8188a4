"""``-T second_grader=MODEL``: an LLM-judged task gets a second scorer graded by the ``grader2`` role, named
``<judge>_grader2``, and records the second judge model; a judge without a grader refuses one in one line."""

from __future__ import annotations

import pytest
from inspect_ai import eval
from inspect_ai.model import model_roles
from inspect_ai.util import registry_info

from mara_bench.catalog import get_benchmark
from mara_bench.core.inspect_compat import init_model_roles
from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.testing import scripted_model


def _scorer_names(task) -> list[str]:
    return [registry_info(scorer).name.rsplit("/", 1)[-1] for scorer in task.scorer]


def test_a_second_grader_adds_a_second_judge_of_the_same_samples(grader_bound):
    task = evaluation_task(
        get_benchmark("bamboogle"),
        data="samples",
        limit=3,
        judge="equivalence",
        second_grader="mockllm/model",
    )
    assert _scorer_names(task) == ["equivalence", "equivalence_grader2"]
    assert str(task.model_roles["grader2"]) == "mockllm/model"
    assert task.metadata["second_judge_model"] == "mockllm/model"


def test_the_eval_s_own_grader2_role_judges_every_sample_a_second_time():
    """As under ``inspect eval --model-role grader=A --model-role grader2=B`` (roles bound before task creation)."""
    roles = {
        "grader": scripted_model(["yes"] * 3, name="mockllm/first"),
        "grader2": scripted_model(["no"] * 3, name="mockllm/second"),
    }
    previous = model_roles()
    init_model_roles({**previous, **roles})
    try:
        task = evaluation_task(get_benchmark("bamboogle"), data="samples", limit=3, judge="equivalence")
    finally:
        init_model_roles(previous)
    (log,) = eval(task, model=scripted_model(["an answer"] * 3), model_roles=roles, display="none")
    assert [s.scores["equivalence"].value["correct"] for s in log.samples] == [1.0] * 3
    assert [s.scores["equivalence_grader2"].value["correct"] for s in log.samples] == [0.0] * 3


def test_a_judge_that_asks_no_grader_refuses_a_second_one():
    with pytest.raises(ConfigError, match="the 'math' judge asks no grader model"):
        evaluation_task(get_benchmark("aime2025"), data="samples", second_grader="mockllm/model")
