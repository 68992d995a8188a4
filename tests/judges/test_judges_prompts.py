"""Judge prompt files: source headers, verbatim official text, and the parsers of the simpler judges."""

from __future__ import annotations

import pytest

from mara_bench.judges.equivalence import judge_prompt as equivalence_prompt
from mara_bench.judges.equivalence import parse_verdict as parse_equivalence
from mara_bench.judges.simpleqa import grader_prompt, parse_grade, summary
from mara_bench.judges.templates import PROMPTS_DIR, load_prompt


@pytest.mark.parametrize("path", sorted(PROMPTS_DIR.glob("*.txt")), ids=lambda p: p.name)
def test_every_prompt_names_its_source(path):
    assert path.read_text(encoding="utf-8").startswith("# source: ")


def test_unknown_prompt_names_the_known_ones():
    with pytest.raises(ValueError, match="known prompts: equivalence_judge, hle_judge, simpleqa_grader"):
        load_prompt("gpqa_judge")


def test_simpleqa_prompt_is_the_official_template():
    prompt = grader_prompt("Who wrote Hamlet?", "William Shakespeare", "Shakespeare")
    assert prompt.startswith("Your job is to look at a question, a gold target, and a predicted answer")
    assert (
        "Question: Who wrote Hamlet?\nGold target: William Shakespeare\nPredicted answer: Shakespeare\n"
        in prompt
    )
    assert prompt.endswith('Just return the letters "A", "B", or "C", with no text around it.')
    assert prompt.count("Predicted answer 4:") == 3  # the official INCORRECT examples number two answers "4"
    # the Jason Wei example: gold "1.73 m", predicted "1.75" (every official copy, and MATPO's)
    assert 'the gold target is "1.73 m". The predicted answer "1.75" would be considered CORRECT' in prompt


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("A", "CORRECT"),
        (" b.", "INCORRECT"),
        ("**C**", "NOT_ATTEMPTED"),
        ("NOT_ATTEMPTED", "NOT_ATTEMPTED"),
        ("not attempted", "NOT_ATTEMPTED"),
        ("A: CORRECT", "CORRECT"),
        ("INCORRECT", "INCORRECT"),
        ("A or B", None),
        ("The answer is correct", None),
        ("D", None),
    ],
)
def test_parse_simpleqa_grade(reply, grade):
    assert parse_grade(reply) == grade


def test_simpleqa_summary_matches_the_official_formulas():
    # 10 items: 6 correct, 2 incorrect, 2 not attempted
    result = summary(correct=0.6, incorrect=0.2, not_attempted=0.2)
    assert result["correct"] == 0.6
    assert result["not_attempted"] == 0.2
    assert result["correct_given_attempted"] == pytest.approx(0.75)
    assert result["f"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert summary(0.0, 0.0, 1.0) == {
        "correct": 0.0,
        "not_attempted": 1.0,
        "correct_given_attempted": 0.0,
        "f": 0.0,
    }


def test_equivalence_prompt_lists_every_gold():
    prompt = equivalence_prompt("Capital of France?", ["Paris", "Paris, France"], "It is Paris.")
    assert "Gold answer(s):\n- Paris\n- Paris, France\n" in prompt
    assert "Response to grade:\nIt is Paris.\n" in prompt


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("yes", True),
        ("No.", False),
        ("**YES**", True),
        ("'no'", False),
        ("yes, because", None),
        ("not sure", None),
    ],
)
def test_parse_equivalence_verdict(reply, verdict):
    assert parse_equivalence(reply) is verdict
