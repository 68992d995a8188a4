"""The toy addition task: reproducible questions and an exact-answer reward with hand-checked tiers."""

from __future__ import annotations

import re

import pytest

from harness.systems.types import Episode
from trainer.tasks.toy import NUMBER_FIRST, addition_task, reply_reward


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


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="n_prompts >= 1"):
        addition_task(n_prompts=0)
