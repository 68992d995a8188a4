"""The toy addition task: reproducible questions and an exact-answer reward with hand-checked tiers."""

from __future__ import annotations

import re

import pytest

from mara_bench.core.episodes import Episode
from mara_bench.trainer.tasks.toy import NUMBER_FIRST, addition_task, reply_reward


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("7", 1.0),
        (" 7\n", 1.0),  # surrounding whitespace is not part of the answer
        ("7 apples", NUMBER_FIRST),
        ("it is 7.", NUMBER_FIRST),
        ("17", 0.0),  # a longer number containing the digit is wrong
        ("8 or 7", 0.0),  # the first number decides
        ("seven", 0.0),
        ("", 0.0),
    ],
)
def test_reply_reward_tiers(reply, expected):
    assert reply_reward(reply, "7") == expected


def test_task_reward_reads_the_episode_final_answer():
    task = addition_task(n_prompts=1, total=7)
    assert task.reward(task.items[0], Episode("direct", "q", final_answer="7")) == 1.0
    assert task.reward(task.items[0], Episode("direct", "q", final_answer=None)) == 0.0


def test_questions_are_reproducible_and_their_answers_are_the_sums():
    first, again = addition_task(n_prompts=20, seed=3), addition_task(n_prompts=20, seed=3)
    assert first.items == again.items
    assert len({item["id"] for item in first.items}) == 20
    for item in first.items:
        a, b = map(int, re.match(r"What is (\d+) \+ (\d+)\?", item["question"]).groups())
        assert item["answer"] == str(a + b) and max(a, b) <= 50
    fixed = addition_task(n_prompts=20, total=7)
    assert {item["answer"] for item in fixed.items} == {"7"}
    assert len({item["question"] for item in fixed.items}) > 1  # same target, different questions


def test_a_fixed_total_question_never_states_its_sum_when_operands_start_at_one():
    """The Verifier recipe's toy: a 7 in the Verifier's prompt is then the judged solution's, never the question's."""
    operands = [
        tuple(map(int, re.match(r"What is (\d+) \+ (\d+)\?", item["question"]).groups()))
        for item in addition_task(n_prompts=64, total=7, min_operand=1).items
    ]
    assert all(min(pair) >= 1 and sum(pair) == 7 for pair in operands)
    assert "7" not in "".join(str(a) + str(b) for a, b in operands)
    assert {a for a, _ in operands} == {1, 2, 3, 4, 5, 6}
    assert (
        addition_task(n_prompts=20, total=7).items
        == addition_task(n_prompts=20, total=7, min_operand=0).items
    )


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_prompts >= 1"):
        addition_task(n_prompts=0)
    with pytest.raises(ValueError, match="total >= 2 \\* min_operand"):
        addition_task(total=7, min_operand=4)
    with pytest.raises(ValueError, match="min_operand <= max_operand"):
        addition_task(max_operand=3, min_operand=4)
