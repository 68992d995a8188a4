"""MATPO: its reward manager's 0.9·acc + 0.5·(0.1·fmt_planner + mean 0.1·fmt_worker) on real planner/worker runs, GRPO over planner rows, each worker given its planner's
scalar advantage on its own mask, and one smoke training step on the tiny model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _method_helpers import RewardByAnswer, run, smoke_config, tool_returning, two_steps

from mara_bench.harness.prompts.sets import prompt_set
from mara_bench.trainer.algorithms.advantages import GroupNorm
from mara_bench.trainer.config import TaskConfig
from mara_bench.trainer.methods.matpo import (
    advantages,
    matpo_reward,
    planner_format,
    rewarded_samples,
    worker_formats,
)
from mara_bench.trainer.methods.mcp_format import format_reward
from mara_bench.trainer.run.engine import Trainer

ITEM = {"id": "q", "question": "What is the capital of Arvena?", "answer": "Lomir"}
TASK = RewardByAnswer({"Lomir": 1.0, "Paris": 0.0})


def use(tool: str, arguments: str, server: str = "browsing_agent") -> str:
    return (
        f"<use_mcp_tool>\n<server_name>{server}</server_name>\n<tool_name>{tool}</tool_name>\n"
        f"<arguments>{arguments}</arguments>\n</use_mcp_tool>"
    )


DELEGATE = use("search_and_browse", '{"subtask": "find the capital of Arvena"}')
SEARCH = use("google_search", '{"q": "Arvena capital"}', server="search_and_scrape_webpage")
SUMMARY = "## Conclusion: **Lomir**"


def searching_rollout():
    """Planner: delegates (well-formed), then names an unknown tool (malformed), then answers Lomir. Its worker:
    a search without ``gl``/``hl`` and a call with broken JSON (both malformed), then no tool (finished) and the
    summary. acc 1; planner fmt 1/2, the worker's 0/2; reward = 0.9 + 0.5 * (0.05 + 0) = 0.925."""
    return run(
        "matpo",
        ITEM["question"],
        {
            "planner": [DELEGATE, use("ask_friend", '{"who": "x"}'), "\\boxed{Lomir}"],
            "worker": [SEARCH, use("google_search", "{q: broken"), "Found it.", SUMMARY],
        },
        tool_returning(search="The capital of Arvena is Lomir."),
        worker_max_turns=3,
    )


def guessing_rollout():
    """Planner: delegates under the wrong server name (malformed), answers Paris; its worker answers at once.
    acc 0; planner fmt 0, the worker's 1 (no block); reward = 0.5 * (0 + 0.1) = 0.05."""
    return run(
        "matpo",
        ITEM["question"],
        {
            "planner": [use("search_and_browse", '{"subtask": "Arvena"}', server="agent"), "\\boxed{Paris}"],
            "worker": ["It is Paris.", SUMMARY],
        },
        worker_max_turns=3,
    )


_MATPO_VECTORS = json.loads((Path(__file__).parent / "vectors" / "matpo_mcp_format.json").read_text())


_REWARD_VECTORS = json.loads((Path(__file__).parent / "vectors" / "matpo_reward.json").read_text())


def test_formats_are_matpos_check_over_each_agents_turns():
    assert planner_format(searching_rollout()) == pytest.approx(0.5)
    assert worker_formats(searching_rollout()) == [0.0]
    assert (planner_format(guessing_rollout()), worker_formats(guessing_rollout())) == (0.0, [1.0])
    no_tools = run("matpo", ITEM["question"], {"planner": ["\\boxed{Paris}"]})
    assert (planner_format(no_tools), worker_formats(no_tools)) == (
        1.0,
        [],
    )  # no tool call at all: format 1.0


def test_two_worker_rollouts_are_scored_apart():
    episode = run(
        "matpo",
        ITEM["question"],
        {"planner": [DELEGATE, DELEGATE, "\\boxed{Lomir}"], "worker": ["Done.", SUMMARY, SEARCH, SUMMARY]},
        tool_returning(search="The capital of Arvena is Lomir."),
        worker_max_turns=1,
    )
    assert worker_formats(episode) == [1.0, 0.0]


@pytest.mark.parametrize(
    "case", _REWARD_VECTORS["cases"], ids=lambda case: f"{len(case['worker_fmts'])}workers"
)
def test_reward_equals_matpos_reward_manager(case):
    # computed by running the combination steps of MATPO's reward manager (see the file's "source"); exact floats
    assert matpo_reward(case["acc"], case["planner_fmt"], case["worker_fmts"]) == case["reward"]


@pytest.mark.parametrize("case", _MATPO_VECTORS["cases"], ids=lambda case: case["role"])
def test_format_reward_equals_matpos_check_mcp_format(case):
    # computed by running MATPO's check_mcp_format (see the file's "source")
    system = prompt_set("matpo", "paper").system_prompt(case["role"])
    assert format_reward(system, case["replies"]) == case["fmt"]


@pytest.fixture
def samples(tiny_tokenizer):
    return rewarded_samples(ITEM, [searching_rollout(), guessing_rollout()], TASK, tiny_tokenizer)


def test_rollout_reward_and_rows(samples):
    assert [(s.role, s.parent) for s in samples] == [
        ("planner", None),
        ("worker", 0),
        ("planner", None),
        ("worker", 2),
    ]
    assert [s.reward for s in samples] == pytest.approx([0.925, 0.925, 0.05, 0.05])


def test_worker_rows_get_their_planners_scalar_advantage_on_their_own_masks(samples):
    advantages(samples, GroupNorm())
    # planner rewards (0.925, 0.05): two distinct values normalise to +-1/sqrt(2)
    assert [samples[0].advantage, samples[2].advantage] == pytest.approx(
        [1 / math.sqrt(2), -1 / math.sqrt(2)], abs=1e-5
    )
    for worker, sign in ((samples[1], 1), (samples[3], -1)):
        assert len(worker.advantage) == len(worker.loss_mask)
        expected = [sign / math.sqrt(2) * m for m in worker.loss_mask]
        assert worker.advantage == pytest.approx(expected, abs=1e-5)
    assert (
        samples[1].loss_mask != samples[3].loss_mask and 0 in samples[1].loss_mask
    )  # tool responses untrained


def test_one_training_step_on_the_tiny_model(tiny_model_dir, tmp_path):
    task = TaskConfig(
        factory="mara_bench.trainer.tasks.lookup:lookup_task",
        args={"n_prompts": 1},
        system="matpo",
        system_options={"max_turns": 2, "worker_max_turns": 1},
    )
    trainer = Trainer(smoke_config(tiny_model_dir, task, method="matpo"), tmp_path)
    real, scripted, moved = two_steps(trainer, [searching_rollout(), guessing_rollout()])
    assert real["skipped"] == 0.0 and all(math.isfinite(real[k]) for k in ("loss", "grad_norm", "entropy"))
    # with the look-up task's exact match as acc: both rollouts as above
    assert scripted["reward_mean"] == pytest.approx((0.925 + 0.05) / 2)
    assert scripted["skipped"] == 0.0 and scripted["grad_norm"] > 0.0 and moved
