"""M-ASK: turn-level rewards on a real run (plan/answer F1, search/summary/update share the turn's ΔF1, ``<end>``
= 0), the clear error without per-turn answers, and one PPO + shared-critic smoke step on the tiny model."""

from __future__ import annotations

import math

import pytest
from _method_helpers import run, smoke_config, tool_returning, two_steps

from mara_bench.trainer.config import TaskConfig
from mara_bench.trainer.methods.mask import METHOD, f1_reward, rewarded_samples, turn_rewards
from mara_bench.trainer.run.engine import Trainer

ITEM = {"id": "q", "question": "What is the capital of Arvena?", "answer": "Lomir"}
SCRIPTS = {
    "plan": ["<q1>Capital of Arvena?</q1><a1>Paris</a1><final_answer>Paris</final_answer>"],
    "search": ["<search>Arvena capital</search>", "<search>Lomir city</search>", "<end>"],
    "summary": [
        "<evidence>The capital of Arvena is Lomir.</evidence>",
        "<evidence>Lomir is a city.</evidence>",
    ],
    "update": ["<Update>t1</Update>", "<Add>t2</Add>"],
    "answer": [
        "<final_answer>Lomir city</final_answer>",
        "<final_answer>Lomir</final_answer>",
    ],
}


def episode(**options):
    return run(
        "mask",
        ITEM["question"],
        {role: list(replies) for role, replies in SCRIPTS.items()},
        tool_returning(retrieve="The capital of Arvena is Lomir."),
        max_iterations=3,
        **options,
    )


def test_turn_level_rewards_follow_equations_2_and_3():
    run_ = episode(answer_every_turn=True)
    rewards = turn_rewards(run_, "Lomir")
    # a_0 = Paris: F1 0; a_1 = "Lomir city": P 1/2, R 1, F1 2/3; a_2 = Lomir: F1 1
    roles = ["plan"] + ["search", "summary", "update", "answer"] * 2 + ["search"]
    assert [(call.role, call.turn) for call in run_.calls] == list(
        zip(roles, [0] + [1] * 4 + [2] * 4 + [3], strict=True)
    )
    plan, gain_1, answer_1, gain_2, answer_2, end = 0.0, 2 / 3, 2 / 3, 1 / 3, 1.0, 0.0
    expected = [plan] + [gain_1] * 3 + [answer_1] + [gain_2] * 3 + [answer_2] + [end]
    assert [rewards[call.id] for call in run_.calls] == pytest.approx(expected)


def test_yes_no_items_are_rewarded_by_exact_match():
    assert (f1_reward("Yes", "yes"), f1_reward("no", ["yes"]), f1_reward(None, "yes")) == (1.0, 0.0, 0.0)


def test_training_needs_an_answer_every_turn():
    with pytest.raises(ValueError, match="answer_every_turn: true"):
        turn_rewards(episode(), "Lomir")


def test_every_call_is_one_sample_rewarded_on_its_own(tiny_tokenizer):
    samples = rewarded_samples(ITEM, [episode(answer_every_turn=True)], task=None, tokenizer=tiny_tokenizer)
    assert [s.role for s in samples] == ["plan"] + ["search", "summary", "update", "answer"] * 2 + ["search"]
    assert [s.reward for s in samples] == pytest.approx(
        [0, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 1 / 3, 1 / 3, 1 / 3, 1, 0]
    )
    assert [s.parent for s in samples] == [None, 0, 1, 2, 3, 4, 5, 6, 7, 8]


def one_lookup_question() -> TaskConfig:
    """The look-up task with one question, run by the mask system with an answer every turn (eq. 3)."""
    return TaskConfig(
        factory="mara_bench.trainer.tasks.lookup:lookup_task",
        args={"n_prompts": 1},
        system="mask",
        system_options={"max_iterations": 1, "answer_every_turn": True},
    )


def test_one_ppo_step_with_the_shared_critic_on_the_tiny_model(tiny_model_dir, tmp_path):
    task = one_lookup_question()
    config = smoke_config(tiny_model_dir, task, method="mask", advantage="gae", gamma=1.0, lam=1.0)
    trainer = Trainer(config, tmp_path)
    assert trainer.critic is not None
    real, scripted, moved = two_steps(trainer, [episode(answer_every_turn=True)] * 2)
    for metrics in (real, scripted):
        assert metrics["skipped"] == 0.0
        assert all(math.isfinite(metrics[k]) for k in ("loss", "grad_norm", "value_loss"))
    assert scripted["reward_mean"] == pytest.approx((0 + 4 * 2 / 3 + 3 / 3 + 1 + 0) / 10)
    assert scripted["value_loss"] > 0.0 and scripted["grad_norm"] > 0.0 and moved


def test_trajectory_level_ablation_rewards_every_call_with_the_final_f1(tiny_model_dir, tiny_tokenizer):
    from mara_bench.trainer.config import AlgorithmConfig, MaskConfig
    from mara_bench.trainer.methods import get_method

    run_ = episode(answer_every_turn=True)
    ablation = AlgorithmConfig(method="mask", advantage="gae", mask=MaskConfig(reward="trajectory"))
    method = get_method("mask").configured(ablation)
    samples = method.rewarded_samples(ITEM, [run_], None, tiny_tokenizer)
    assert run_.final_answer == "Lomir" and [s.reward for s in samples] == [1.0] * len(run_.calls)
    turn_level = get_method("mask").configured(AlgorithmConfig(method="mask", advantage="gae"))
    assert [s.reward for s in turn_level.rewarded_samples(ITEM, [run_], None, tiny_tokenizer)][
        0
    ] == 0.0  # plan


def test_the_step_metric_is_the_final_answers_f1_whatever_the_agents_earn():
    right = episode(answer_every_turn=True)  # final answer "Lomir"; its plan earns 0
    short = run(
        "mask",
        ITEM["question"],
        {**{role: list(replies) for role, replies in SCRIPTS.items()}, "search": ["<end>"]},
        tool_returning(retrieve="The capital of Arvena is Lomir."),
        max_iterations=3,
        answer_every_turn=True,
    )  # no search: the Answer agent's "Lomir city" is final, F1 2/3
    numerator, denominator = METHOD.metrics([ITEM], [[right, short]])["mask/final_answer_f1"]
    assert (short.final_answer, denominator) == ("Lomir city", 2.0)
    assert numerator / denominator == pytest.approx((1.0 + 2 / 3) / 2)


def test_a_step_whose_every_question_is_filtered_out_skips_the_update(tiny_model_dir, tmp_path):
    task = one_lookup_question()
    config = smoke_config(
        tiny_model_dir, task, method="mask", advantage="gae", gamma=1.0, lam=1.0, filter_zero_variance=True
    )
    trainer = Trainer(config, tmp_path)
    wrong = {"plan": SCRIPTS["plan"], "search": ["<end>"], "answer": ["<final_answer>Paris</final_answer>"]}
    nothing_earned = run("mask", ITEM["question"], wrong, tool_returning(), answer_every_turn=True)

    async def scripted_rollout(items):
        return [[nothing_earned, nothing_earned] for _ in items], [0] * len(items)

    trainer.source.episodes = scripted_rollout
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    metrics = (
        trainer.train_step()
    )  # every reward 0: the question's rows are dropped, nothing is left to train
    assert metrics["skipped"] == 1.0 and trainer.last_samples == []
    assert len(trainer.last_rewarded) == 2 * len(nothing_earned.calls)  # what was earned is still read back
    assert all(s.reward == 0.0 and s.advantage is None for s in trainer.last_rewarded)
    assert all((a == b).all() for a, b in zip(before, trainer.policy.parameters(), strict=True))


MALFORMED = {
    **SCRIPTS,
    "plan": [
        "<q1>Capital of Arvena?</q1><a1>Paris</a1> so <final_answer>Paris</final_answer>"
    ],  # text outside
    "search": ["<search>Arvena capital</search>", "Next: <search>Lomir city</search>", "<end> enough"],
    "update": ["<Update>t1</Update>", "<Add>t5</Add>"],  # t5: the trajectory has 1 step
    "answer": ["Lomir city", "<final_answer>Lomir</final_answer>"],  # no tag: read as the answer all the same
}


def configured(**switches):
    from mara_bench.trainer.config import AlgorithmConfig, MaskConfig
    from mara_bench.trainer.methods import get_method

    algorithm = AlgorithmConfig(method="mask", advantage="gae", mask=MaskConfig(**switches))
    return get_method("mask").configured(algorithm)


def malformed_episode():
    """An M-ASK run whose scripted replies break the released code's format in several roles."""
    return run(
        "mask",
        ITEM["question"],
        {role: list(replies) for role, replies in MALFORMED.items()},
        tool_returning(retrieve="The capital of Arvena is Lomir."),
        max_iterations=3,
        answer_every_turn=True,
    )


def test_the_format_penalty_adds_minus_one_to_each_malformed_call_as_the_released_code(tiny_tokenizer):
    malformed = malformed_episode()
    penalised = configured(format_penalty=True).rewarded_samples(ITEM, [malformed], None, tiny_tokenizer)
    earned = [s.reward for s in rewarded_samples(ITEM, [malformed], None, tiny_tokenizer)]
    legal = [call.meta["legal_format"] for call in malformed.calls]
    assert legal == [False, True, True, True, False, False, True, False, True, False]
    # the same F1 / ΔF1 as without the penalty (a_1 = "Lomir city", a_2 = "Lomir"), -1 where the format breaks;
    # the plan's F1 is 0, so its reward is exactly -1; the <end> call is never penalised
    assert earned == pytest.approx([0, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 1 / 3, 1 / 3, 1 / 3, 1, 0])
    assert penalised[0].reward == -1.0
    assert [s.reward for s in penalised] == [
        reward - (0.0 if ok or call.role == "search" and call.meta["action"] == "end" else 1.0)
        for reward, ok, call in zip(earned, legal, malformed.calls, strict=True)
    ]
    assert [s.reward for s in penalised][-1] == 0.0


def test_a_search_reply_with_neither_tag_searches_its_first_line_and_is_penalised(tiny_tokenizer):
    # the released SearchAgent.parse_response falls back to a query cut from the reply's first line
    fallback = run(
        "mask",
        ITEM["question"],
        {
            **{role: list(replies) for role, replies in SCRIPTS.items()},
            "search": ["I'd rather not, sorry.\nReally.", "<end>"],
        },
        tool_returning(retrieve="The capital of Arvena is Lomir."),
        answer_every_turn=True,
    )
    rewards = [
        s.reward
        for s in configured(format_penalty=True).rewarded_samples(ITEM, [fallback], None, tiny_tokenizer)
    ]
    assert [c.role for c in fallback.calls] == ["plan", "search", "summary", "update", "answer", "search"]
    assert fallback.tool_calls[0].arguments == {"query": "I d rather not sorry"}
    assert fallback.meta["stopped"] == "end"
    # plan F1 0 (legal); the fallback search: the turn's F1 gain 2/3 ("Lomir city"), -1 for its format
    assert rewards[:2] == pytest.approx([0.0, 2 / 3 - 1])


def test_without_the_penalty_the_rewards_are_todays_bit_for_bit(tiny_tokenizer):
    malformed = malformed_episode()
    off = configured()
    assert off.rewarded_samples is rewarded_samples  # the method is left as it was
    legal_run = episode(answer_every_turn=True)  # every call legal: the penalty changes nothing either
    for run_ in (malformed, legal_run):
        today = [s.reward for s in rewarded_samples(ITEM, [run_], None, tiny_tokenizer)]
        assert [s.reward for s in off.rewarded_samples(ITEM, [run_], None, tiny_tokenizer)] == today
    assert [
        s.reward
        for s in configured(format_penalty=True).rewarded_samples(ITEM, [legal_run], None, tiny_tokenizer)
    ] == [s.reward for s in rewarded_samples(ITEM, [legal_run], None, tiny_tokenizer)]
    # the trajectory-level ablation takes the penalty too: the final F1 (1.0), -1 where the format breaks
    ablation = configured(reward="trajectory", format_penalty=True).rewarded_samples(
        ITEM, [malformed], None, tiny_tokenizer
    )
    assert [s.reward for s in ablation] == [0.0, 1, 1, 1, 0.0, 0.0, 1, 0.0, 1, 1]


def test_the_step_reports_the_share_of_calls_outside_the_released_format():
    malformed = malformed_episode()
    illegal, calls = METHOD.metrics([ITEM], [[malformed, episode(answer_every_turn=True)]])[
        "mask/illegal_format_frac"
    ]
    assert (illegal, calls) == (5.0, 20.0)
