"""``adder/<skill>``: a scripted Solver right a fixed, reproducible share of the time, through Inspect."""

from __future__ import annotations

import pytest
from inspect_ai.model import get_model

from mara_bench.harness.providers.adder import scripted_answer

PROMPTS = [f"What is {a} + {b}? Answer with the number only." for a in range(10, 30) for b in range(10, 20)]


@pytest.mark.parametrize("skill", [0.0, 0.3, 0.5, 1.0])
def test_the_share_of_right_answers_is_the_skill_and_wrong_ones_are_off_by_one_to_three(skill):
    right = 0
    for prompt in PROMPTS:
        a, b = (int(x) for x in prompt.split("is ")[1].split("?")[0].split(" + "))
        answer = int(scripted_answer(prompt, skill).removeprefix("The answer is ").rstrip("."))
        right += answer == a + b
        assert answer == a + b or 1 <= abs(answer - (a + b)) <= 3
    assert abs(right / len(PROMPTS) - skill) < 0.08
    assert scripted_answer(PROMPTS[0], skill) == scripted_answer(PROMPTS[0], skill)


async def test_the_provider_answers_through_inspect_and_refuses_a_skill_out_of_range():
    model = get_model("adder/1.0")
    output = await model.generate("What is 12 + 30?")
    assert output.completion == "The answer is 42." and output.usage.output_tokens > 0
    with pytest.raises(ValueError, match=r"adder/2: give the share"):
        get_model("adder/2")
