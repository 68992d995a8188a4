"""The papers' switches on real training steps of the tiny model: MarsRL's train_agents (Table 2), optional
filtering of zero-variance groups (counted either way), and MarsRL/UloRL dynamic masking of mastered positive
tokens once the entropy is under its target."""

from __future__ import annotations

import pytest
from _method_helpers import smoke_config, two_steps
from test_method_marsrl import RIGHT, SAYS_CORRECT, vc_episode

from mara_bench.trainer.config import MarsRLConfig, TaskConfig
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.tasks.toy import ToyTask


def test_marsrl_vc_trains_only_the_verifier_and_corrector(tiny_model_dir, tmp_path):
    task = TaskConfig(
        args={"n_prompts": 4, "total": 7},
        system="vc",
        system_options={"accept_after": 1, "max_iterations": 1, "solver_attempts": 1},
    )
    config = smoke_config(
        tiny_model_dir, task, method="marsrl", marsrl=MarsRLConfig(train_agents=["verifier", "corrector"])
    )
    trainer = Trainer(config, tmp_path)
    says_wrong = "Off.\n\n**Correctness**: Wrong"
    caught = vc_episode("I think it is \\boxed{5}.", [says_wrong, SAYS_CORRECT], [RIGHT])  # V1 right: +1
    false_alarm = vc_episode(RIGHT, [says_wrong, SAYS_CORRECT], [RIGHT])  # V1 wrong: -1
    _, metrics, moved = two_steps(trainer, [caught, false_alarm])
    assert metrics["role/solver/samples"] == 0 and metrics["role/verifier/samples"] == 4
    assert metrics["role/corrector/samples"] == 2 and moved
    assert metrics["role/verifier/adv_nonzero_frac"] > 0
    # still measured on every agent's calls: 2 flags, 1 of a wrong solution; the one wrong solution was flagged
    assert (metrics["marsrl/verifier_precision"], metrics["marsrl/verifier_recall"]) == (0.5, 1.0)
    assert metrics["marsrl/solver_accuracy"] == 0.5  # the untrained Solver: 1 of its 2 answers right
    dump = (tmp_path / "rollouts" / "step_1.jsonl").read_text()
    assert '"role": "solver"' not in dump.split('"samples"')[1]


class ConstantTask(ToyTask):
    def reward(self, item, episode):  # every group has zero variance
        return 1.0


class LengthParityTask(ToyTask):
    def reward(self, item, episode):  # positive and negative rows in every group (most of the time)
        return 1.0 if len(episode.final_answer or "") % 2 else -1.0


def with_task(trainer: Trainer, task: ToyTask) -> Trainer:
    trainer.rollout.task = task
    trainer.prompts.size = len(task.items)
    return trainer


def items(n: int) -> list[dict]:
    return [{"id": f"q{i}", "question": f"What is {i}?", "answer": str(i)} for i in range(n)]


@pytest.mark.parametrize("drop", [False, True])
def test_zero_variance_groups_are_counted_and_optionally_dropped(tiny_model_dir, tmp_path, drop):
    config = smoke_config(tiny_model_dir, TaskConfig(), filter_zero_variance=drop)
    metrics = with_task(Trainer(config, tmp_path), ConstantTask(items(2))).train_step()
    assert metrics["groups_zero_variance_frac"] == 1.0
    assert metrics["role/solver/samples"] == (0 if drop else 2)
    assert metrics["skipped"] == (1.0 if drop else 0.0)


def test_mastered_positive_tokens_leave_the_mask_only_below_the_target_entropy(tiny_model_dir, tmp_path):
    config = smoke_config(tiny_model_dir, TaskConfig(), mpt_target_entropy=100.0, mpt_probability=1e-30)
    config.rollout.group_size = 4
    trainer = with_task(Trainer(config, tmp_path), LengthParityTask(items(4)))
    first = trainer.train_step()  # no entropy measured yet: nothing masked
    assert first["mastered_tokens_masked"] == 0.0 and trainer.updater.last_entropy < 100.0
    second = (
        trainer.train_step()
    )  # every token of a positive row has probability >= 1e-30: all of them masked
    positive_tokens = (
        second["role/solver/samples"]
        * second["role/solver/response_tokens"]
        * ((second["reward_mean"] + 1) / 2)
    )
    assert second["mastered_tokens_masked"] == pytest.approx(positive_tokens)


class HalfUnscoredTask(ToyTask):
    """A grader that cannot judge every other episode."""

    calls = 0

    async def grade(self, item, episode):
        HalfUnscoredTask.calls += 1
        return None if HalfUnscoredTask.calls % 2 else 1.0

    def reward(self, item, episode):
        return 1.0


def test_unscored_judgements_drop_their_episodes_and_are_counted(tiny_model_dir, tmp_path):
    config = smoke_config(tiny_model_dir, TaskConfig())
    config.rollout.group_size = 4
    metrics = with_task(Trainer(config, tmp_path), HalfUnscoredTask(items(2))).train_step()
    assert (
        metrics["unscored"] == 2 and metrics["role/solver/samples"] == 2
    )  # 1 question x 4 episodes, 2 dropped
    dump = (tmp_path / "rollouts" / "step_0.jsonl").read_text()
    assert '"unscored": 2' in dump
