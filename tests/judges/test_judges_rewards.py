"""The training reward each judge registers beside its scorer: the rule judges' pure cores, the LLM judges' grader
requests and verdict rewards, and the options each takes."""

from __future__ import annotations

import pytest

from mara_bench.judges import cores, hle, simpleqa
from mara_bench.judges.registry import JUDGES, judge_reward, rewarding_judges
from mara_bench.judges.rewards import GraderReward, RuleReward


def test_the_judges_that_reward_training_register_a_typed_reward():
    assert rewarding_judges() == ["hle", "simpleqa", "math", "lexical"]
    assert judge_reward("equivalence") is None and judge_reward("gaia") is None
    assert {name: type(judge_reward(name)) for name in rewarding_judges()} == {
        "hle": GraderReward,
        "simpleqa": GraderReward,
        "math": RuleReward,
        "lexical": RuleReward,
    }
    with pytest.raises(ValueError, match="unknown judge 'lexicl'; valid: .*did you mean 'lexical'"):
        judge_reward("lexicl")
    assert set(rewarding_judges()) <= set(JUDGES)


def test_rule_rewards_are_the_scorers_cores():
    math_reward, lexical_reward = judge_reward("math"), judge_reward("lexical")
    assert isinstance(math_reward, RuleReward) and isinstance(lexical_reward, RuleReward)
    assert math_reward.score("so \\boxed{7}", "7", {}) == 1.0
    assert math_reward.score("so \\boxed{8}", ["7", "8"], {}) == 0.0  # the first gold
    golds = ["Founder 0", "F0"]
    values = cores.lexical_values("It was Founder 0.", golds)[1]
    assert lexical_reward.score("It was Founder 0.", golds, {}) == values["em"] == 0.0
    assert (
        lexical_reward.score("It was Founder 0.", golds, {"metric": "f1"})
        == values["f1"]
        == pytest.approx(2 / 3)
    )
    # M-ASK's variant leaves yes/no golds out of F1: the reward falls back to the item's em
    assert cores.lexical_values("yes", ["yes"], "mask")[1]["f1"] is None
    assert lexical_reward.score("yes", ["yes"], {"variant": "mask", "metric": "f1"}) == 1.0


def test_each_reward_checks_the_options_it_takes_under_the_callers_key():
    lexical_reward, math_reward, hle_reward = (
        judge_reward("lexical"),
        judge_reward("math"),
        judge_reward("hle"),
    )
    assert lexical_reward and math_reward and hle_reward
    lexical_reward.check_options("lexical", {"variant": "mask", "metric": "acc"}, "task.judge_options")
    with pytest.raises(ValueError, match=r"task.judge_options.metric must be one of em, acc, f1; got 'bleu'"):
        lexical_reward.check_options("lexical", {"metric": "bleu"}, "task.judge_options")
    with pytest.raises(ValueError, match="Unknown lexical variant 'kilt'"):
        lexical_reward.check_options("lexical", {"variant": "kilt"}, "task.judge_options")
    with pytest.raises(ValueError, match=r"where \['metric'\] do not apply to judge 'math'; valid: none"):
        math_reward.check_options("math", {"metric": "f1"}, "where")
    with pytest.raises(ValueError, match=r"where \['variant'\] do not apply to judge 'hle'; valid: none"):
        hle_reward.check_options("hle", {"variant": "mask"}, "where")


def test_grader_rewards_ask_what_the_scorers_ask_and_reward_a_correct_verdict():
    hle_reward, simpleqa_reward = judge_reward("hle"), judge_reward("simpleqa")
    assert isinstance(hle_reward, GraderReward) and isinstance(simpleqa_reward, GraderReward)
    request = hle_reward.request("Q?", "gold", "my answer")
    assert request.prompt == hle.judge_prompt("Q?", "my answer", "gold")
    assert (request.parse, request.schema) == (hle.parse_verdict, hle.RESPONSE_SCHEMA)
    verdict = hle.parse_verdict("correct: yes\nconfidence: 90")
    assert verdict is not None and hle_reward.reward(verdict) == 1.0
    assert hle_reward.reward(hle.parse_verdict("correct: no\nconfidence: 90")) == 0.0
    request = simpleqa_reward.request("Q?", "gold", "my answer")
    assert request.prompt == simpleqa.grader_prompt("Q?", "gold", "my answer")
    assert (request.parse, request.schema) == (simpleqa.parse_grade, None)
    assert [simpleqa_reward.reward(grade) for grade in simpleqa.GRADES] == [1.0, 0.0, 0.0]
