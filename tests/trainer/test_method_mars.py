"""MARS: a shared trajectory reward, advantages per system (eq. 5), System-1 rows balanced to exactly G after the
advantages, System-1 distillates out of System 2's loss, and one smoke training step on the tiny model."""

from __future__ import annotations

import math

import pytest
import torch
from _method_helpers import RewardByAnswer, run, smoke_config, tool_returning, two_steps

from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.advantages import GroupNorm
from mara_bench.trainer.config import TaskConfig
from mara_bench.trainer.methods.mars import balanced_samples, rewarded_samples, system_advantages
from mara_bench.trainer.run.engine import Trainer

ITEM = {"id": "q", "question": "What is the capital of Arvena?", "answer": "Lomir"}
TASK = RewardByAnswer({"Lomir": 1.0, "Paris": 0.0})
CALL = '<tool_call>{"name": "search", "arguments": {"query": "Arvena"}, "purpose": "find the capital"}</tool_call>'
DISTILLED = "Distilled: Arvena's capital is Lomir."


def episode(tool_calls: int, answer: str):
    """System 2 makes ``tool_calls`` searches in one turn (one System-1 call each), then answers."""
    return run(
        "mars",
        ITEM["question"],
        {"system2": [CALL * tool_calls, f"<answer>{answer}</answer>"], "system1": [DISTILLED] * tool_calls},
        tool_returning(search="The capital of Arvena is Lomir."),
    )


@pytest.fixture
def samples(tiny_tokenizer):
    return rewarded_samples(ITEM, [episode(2, "Lomir"), episode(1, "Paris")], TASK, tiny_tokenizer)


def test_trajectory_reward_is_shared_by_both_systems(samples):
    assert [(s.role, s.reward, s.parent, s.group_key) for s in samples] == [
        ("system2", 1.0, None, "q/system2"),
        ("system1", 1.0, 0, "q/system1"),
        ("system1", 1.0, 0, "q/system1"),
        ("system2", 0.0, None, "q/system2"),
        ("system1", 0.0, 3, "q/system1"),
    ]


def test_system2_loss_masks_the_distillates(samples, tiny_tokenizer):
    system2 = samples[0]
    trained = tiny_tokenizer.decode(
        [t for t, m in zip(system2.response_ids, system2.loss_mask, strict=True) if m]
    )
    assert "<answer>Lomir</answer>" in trained and trained.count("<tool_call>") == 2
    assert "Distilled" not in trained
    assert tiny_tokenizer.decode(system2.response_ids).count(DISTILLED) == 2  # in the row, as context only


def test_advantages_are_normalised_within_each_system(samples):
    system_advantages(samples, GroupNorm())
    # System 2 rewards (1, 0): mean 1/2, unbiased std 1/sqrt(2) -> +-1/sqrt(2)
    # System 1 rewards (1, 1, 0): mean 2/3, unbiased std sqrt(1/3) -> (1/3, 1/3, -2/3) * sqrt(3)
    expected = [1 / math.sqrt(2), 1 / math.sqrt(3), 1 / math.sqrt(3), -1 / math.sqrt(2), -2 / math.sqrt(3)]
    assert [s.advantage for s in samples] == pytest.approx(expected, abs=1e-5)


def test_system1_rows_are_down_sampled_to_exactly_g_after_the_advantages(samples):
    system_advantages(samples, GroupNorm())
    torch.manual_seed(0)
    balanced = balanced_samples(samples)
    assert [s.role for s in balanced] == ["system2", "system2", "system1", "system1"]
    assert balanced[0] is samples[0] and balanced[1] is samples[3]
    drawn = [
        next(i for i in (1, 2, 4) if samples[i].response_ids is s.response_ids and s.parent is not None)
        for s in balanced[2:]
    ]
    assert len(set(drawn)) == 2  # M = 3 > G = 2: a subset, without replacement
    for row, index in zip(balanced[2:], drawn, strict=True):
        assert row.advantage == samples[index].advantage  # advantages kept from the full set of 3
        assert row.parent == (0 if index in (1, 2) else 1)  # its trajectory's System-2 row, renumbered


def row(role: str, reward: float, parent: int | None = None) -> Sample:
    return Sample(
        prompt_ids=[1],
        response_ids=[2],
        loss_mask=[1],
        role=role,
        reward=reward,
        parent=parent,
        group_key=f"q/{role}",
    )


def test_system1_rows_are_duplicated_up_to_g_and_absent_system1_trains_system2_alone():
    few = [row("system2", 1.0), row("system2", 0.0), row("system2", 0.0), row("system1", 0.0, parent=2)]
    balanced = balanced_samples(few)
    assert [s.role for s in balanced] == ["system2"] * 3 + ["system1"] * 3  # M = 1 < G = 3: duplicated
    assert all(s.parent == 2 and s.response_ids is few[3].response_ids for s in balanced[3:])
    assert balanced_samples(few[:3]) == few[:3]


def test_one_training_step_on_the_tiny_model(tiny_model_dir, tmp_path, tiny_tokenizer):
    task = TaskConfig(
        factory="mara_bench.trainer.tasks.lookup:lookup_task",
        args={"n_prompts": 1},  # "What is the capital of Arvena?": exact match with "Lomir" is the reward
        system="mars",
        system_options={"max_turns": 2},
    )
    trainer = Trainer(smoke_config(tiny_model_dir, task, method="mars"), tmp_path)
    real, scripted, moved = two_steps(trainer, [episode(2, "Lomir"), episode(1, "Paris")])
    assert real["skipped"] == 0.0 and all(math.isfinite(real[k]) for k in ("loss", "grad_norm", "entropy"))
    assert scripted["reward_mean"] == pytest.approx(3 / 5)  # rewards before balancing: 1 1 1 0 0
    assert scripted["skipped"] == 0.0 and scripted["grad_norm"] > 0.0 and moved
