"""The training loop: it learns the toy task, resumes exactly, and skips non-finite steps."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math

import pytest
import torch

from mara_bench.trainer.config import RolloutConfig
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.tasks.toy import ToyTask


def _params(trainer: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.policy.parameters()]


def test_grpo_learns_to_answer_the_target_sum(toy_config, tmp_path):
    config = dataclasses.replace(
        toy_config, rollout=RolloutConfig(prompts_per_step=8, group_size=8, max_tokens=4)
    )
    trainer = Trainer(config, tmp_path)
    rewards = [trainer.train_step()["reward_mean"] for _ in range(16)]
    assert sum(rewards[:2]) / 2 < 0.05, rewards  # a random tiny model almost never starts its reply with "7"
    assert sum(rewards[-3:]) / 3 > 0.4, rewards  # now nearly every reply's first number is the sum
    item = trainer.task.items[0]
    groups, _ = asyncio.run(trainer.rollout.groups([item]))
    replies = groups[0]
    assert sum(trainer.task.reward(item, episode) > 0 for episode in replies) >= len(replies) // 2


class _LengthTask(ToyTask):
    def reward(self, item, episode):  # varies within every group, so advantages (and the loss) are non-zero
        return float(len(episode.final_answer or "") % 3)


def length_task() -> _LengthTask:
    return _LengthTask([{"id": f"q{i}", "question": f"What is {i}?", "answer": str(i)} for i in range(4)])


def test_norm_length_is_the_constant_divisor_of_seq_mean_token_sum_norm(toy_config, tmp_path):
    task = dataclasses.replace(toy_config.task, factory=f"{__name__}:length_task", args={})
    losses = []
    for norm_length in (4, 12):
        algorithm = dataclasses.replace(
            toy_config.algorithm, loss_mode="seq-mean-token-sum-norm", norm_length=norm_length
        )
        config = dataclasses.replace(toy_config, task=task, algorithm=algorithm)
        trainer = Trainer(config, tmp_path / str(norm_length))
        losses.append(trainer.train_step()["loss"])
    assert losses[0] != 0.0
    assert losses[0] == pytest.approx(3 * losses[1], rel=1e-6)  # same rollouts, loss scaled by 12 / 4


def test_resume_reproduces_the_next_step_exactly(toy_config, tmp_path):
    straight = Trainer(toy_config, tmp_path / "straight")
    expected = [straight.train_step() for _ in range(3)]

    first = Trainer(toy_config, tmp_path / "resumed")
    first.train_step(), first.train_step()
    first.save()
    resumed = Trainer(toy_config, tmp_path / "resumed", resume=True)
    assert resumed.step == 2
    after = resumed.train_step()
    for key in ("reward_mean", "loss", "entropy", "grad_norm", "tokens"):
        assert after[key] == expected[2][key], key
    for a, b in zip(_params(straight), _params(resumed), strict=True):
        assert torch.equal(a, b)


class _NanTask(ToyTask):
    def reward(self, item, episode):
        return math.nan if item["id"] == self.items[0]["id"] else 1.0


def nan_task() -> _NanTask:
    return _NanTask([{"id": f"q{i}", "question": f"What is {i}?", "answer": str(i)} for i in range(4)])


def test_nan_reward_is_reported_and_the_step_skipped(toy_config, tmp_path, caplog):
    config = dataclasses.replace(
        toy_config, task=dataclasses.replace(toy_config.task, factory=f"{__name__}:nan_task", args={})
    )
    trainer = Trainer(config, tmp_path)
    before = _params(trainer)
    with caplog.at_level(logging.WARNING, logger="mara_bench.trainer"):
        metrics = trainer.train_step()
    assert metrics["skipped"] == 1.0 and "loss" not in metrics
    assert "step 0: non-finite reward for questions ['q0']; step skipped" in caplog.messages
    assert all(torch.equal(a, b) for a, b in zip(before, _params(trainer), strict=True))
    assert trainer.step == 1


def test_nan_loss_is_reported_and_the_step_skipped(toy_config, tmp_path, caplog, monkeypatch):
    from mara_bench.trainer.algorithms.losses import policy_loss
    from mara_bench.trainer.registry import POLICY_LOSSES, Named

    def nan_loss(*args, **kwargs):
        loss, stats = policy_loss(*args, **kwargs)
        return loss * math.nan, stats

    monkeypatch.setitem(POLICY_LOSSES, "ppo", Named(nan_loss))
    trainer = Trainer(toy_config, tmp_path)
    before = _params(trainer)
    with caplog.at_level(logging.WARNING, logger="mara_bench.trainer"):
        metrics = trainer.train_step()
    assert metrics["skipped"] == 1.0
    assert "step 0: non-finite loss; step skipped" in caplog.messages
    assert all(torch.equal(a, b) for a, b in zip(before, _params(trainer), strict=True))
    assert all(p.grad is None for p in trainer.policy.parameters())
    assert not trainer.updater.optimizer.state  # AdamW never stepped


def test_ppo_with_critic_and_reference_trains_both_models(toy_config, tmp_path):
    algorithm = dataclasses.replace(toy_config.algorithm, advantage="gae", kl_coef=0.1, ppo_epochs=2)
    trainer = Trainer(dataclasses.replace(toy_config, algorithm=algorithm), tmp_path)
    critic_before = [p.detach().clone() for p in trainer.critic.parameters()]
    metrics = trainer.train_step()
    assert metrics["skipped"] == 0.0
    assert math.isfinite(metrics["value_loss"]) and metrics["value_loss"] > 0
    assert metrics["kl"] == 0.0  # first epoch: the policy still equals the reference
    changed = [not torch.equal(a, b) for a, b in zip(critic_before, trainer.critic.parameters(), strict=True)]
    assert any(changed)


def test_the_critics_value_head_is_drawn_from_the_recipe_seed(toy_config, tmp_path):
    """The value head the base model lacks starts the same in every run of a recipe (and on every rank), whatever
    drew from torch's global generator before the trainer was built."""
    algorithm = dataclasses.replace(toy_config.algorithm, advantage="gae")
    config = dataclasses.replace(toy_config, algorithm=algorithm)
    first = Trainer(config, tmp_path / "a").critic.state_dict()
    torch.rand(1000)
    second = Trainer(config, tmp_path / "b").critic.state_dict()
    assert all(torch.equal(first[name], second[name]) for name in first)
    other = Trainer(dataclasses.replace(config, seed=config.seed + 1), tmp_path / "c").critic.state_dict()
    assert not all(torch.equal(first[name], other[name]) for name in first)
