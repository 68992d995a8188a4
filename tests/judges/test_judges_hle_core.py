"""HLE judge core: the official calibration error, Wald half-width and strict parsing of judge replies."""

from __future__ import annotations

import json
import math
import random

import pytest

from judges.hle import (
    RESPONSE_SCHEMA,
    calibration_error,
    calibration_undefined_reason,
    judge_prompt,
    parse_verdict,
    wald_half_width,
)


def _items(groups: list[tuple[int, float, int]]) -> tuple[list[float], list[bool]]:
    """(count, confidence %, how many correct) groups → parallel confidence / correct lists."""
    confidences: list[float] = []
    correct: list[bool] = []
    for count, confidence, n_correct in groups:
        confidences += [confidence] * count
        correct += [True] * n_correct + [False] * (count - n_correct)
    return confidences, correct


# 250 items: 100 at 20% (0 right: gap .2), 100 at 60% (50 right: gap .1), 50 at 90% (all right: gap .1)
GROUPS_250 = [(100, 20.0, 0), (100, 60.0, 50), (50, 90.0, 50)]


def test_official_calibration_on_250_items_uses_only_the_first_bin():
    # official calib_err: bins [0,100) and [100,250); the last (stretched) bin is dropped; weights over n = 250
    confidences, correct = _items(GROUPS_250)
    assert calibration_error(confidences, correct) == pytest.approx(math.sqrt(100 / 250 * 0.2**2))


def test_all_bins_calibration_on_250_items_weights_each_bin_by_its_size():
    confidences, correct = _items(GROUPS_250)
    expected = math.sqrt(0.4 * 0.2**2 + 0.4 * 0.1**2 + 0.2 * 0.1**2)
    assert calibration_error(confidences, correct, method="all_bins") == pytest.approx(expected)


def test_official_calibration_on_300_items_uses_two_bins_of_a_third():
    # third bin: 100 at 90% with 50 right (gap .4) is the dropped last bin
    confidences, correct = _items([(100, 20.0, 0), (100, 60.0, 50), (100, 90.0, 50)])
    assert calibration_error(confidences, correct) == pytest.approx(math.sqrt((0.2**2 + 0.1**2) / 3))
    all_bins = calibration_error(confidences, correct, method="all_bins")
    assert all_bins == pytest.approx(math.sqrt((0.2**2 + 0.1**2 + 0.4**2) / 3))


def test_calibration_sorts_by_confidence_first():
    confidences, correct = _items(GROUPS_250)
    pairs = list(zip(confidences, correct, strict=True))
    random.Random(7).shuffle(pairs)
    shuffled_confidences, shuffled_correct = zip(*pairs, strict=True)
    assert calibration_error(list(shuffled_confidences), list(shuffled_correct)) == pytest.approx(
        calibration_error(confidences, correct)
    )


@pytest.mark.parametrize("n", [0, 1, 99, 100, 199])
def test_official_calibration_is_undefined_below_two_bins(n):
    confidences, correct = [50.0] * n, [True] * n
    assert calibration_error(confidences, correct) is None
    assert "at least 200" in calibration_undefined_reason(n)


def test_all_bins_calibration_is_defined_for_small_sets_and_undefined_for_none():
    # 3 items at 80%, 2 right: one partial bin, gap |0.8 - 2/3|
    assert calibration_error([80, 80, 80], [True, True, False], method="all_bins") == pytest.approx(
        0.8 - 2 / 3
    )
    assert calibration_error([], [], method="all_bins") is None
    assert (
        calibration_undefined_reason(0, "all_bins") == "calibration error is undefined with no judged items"
    )
    assert calibration_undefined_reason(200) is None


def test_calibration_rejects_bad_input():
    with pytest.raises(ValueError, match="valid methods: official, all_bins"):
        calibration_error([50], [True], method="ece")
    with pytest.raises(ValueError, match="same length"):
        calibration_error([50, 60], [True])
    with pytest.raises(ValueError, match="percentages"):
        calibration_error([150.0], [True], method="all_bins")


def test_wald_half_width():
    assert wald_half_width(50, 100) == pytest.approx(9.8)  # 1.96 * sqrt(50 * 50 / 100)
    assert wald_half_width(8.17, 2154) == pytest.approx(1.96 * math.sqrt(8.17 * 91.83 / 2154))
    assert wald_half_width(0, 10) == 0.0
    with pytest.raises(ValueError, match="n >= 1"):
        wald_half_width(50, 0)
    with pytest.raises(ValueError, match="percentage"):
        wald_half_width(0.5 * 100 + 60, 10)


def test_judge_prompt_fills_the_official_template():
    prompt = judge_prompt("What is 2+2?", "It is 4. Confidence: 90%", "4")
    assert prompt.startswith("Judge whether the following [response] to [question] is correct")
    assert "[question]: What is 2+2?\n\n[response]: It is 4. Confidence: 90%\n" in prompt
    assert "[correct_answer]: 4\n" in prompt
    assert prompt.endswith("Put 100 if there is no confidence score available.")


def test_response_schema_lists_the_official_fields():
    schema = RESPONSE_SCHEMA.json_schema
    assert schema.required == ["extracted_final_answer", "reasoning", "correct", "confidence"]
    assert schema.properties["correct"].enum == ["yes", "no"]


def test_parse_structured_reply():
    reply = {"extracted_final_answer": "4", "reasoning": "same", "correct": "no", "confidence": 35}
    verdict = parse_verdict(json.dumps(reply))
    assert (verdict.extracted_final_answer, verdict.correct, verdict.confidence) == ("4", False, 35.0)
    assert parse_verdict("```json\n" + json.dumps(reply | {"correct": "yes"}) + "\n```").correct is True


@pytest.mark.parametrize(
    "reply",
    [
        {"extracted_final_answer": "4", "reasoning": "r", "correct": "correct", "confidence": 35},
        {"extracted_final_answer": "4", "reasoning": "r", "correct": "yes", "confidence": 135},
        {"extracted_final_answer": "4", "reasoning": "r", "correct": "yes", "confidence": "35"},
        {"extracted_final_answer": "4", "reasoning": "r", "correct": "yes"},
    ],
)
def test_malformed_structured_reply_is_unparsable(reply):
    assert parse_verdict(json.dumps(reply)) is None


def test_parse_text_reply():
    reply = "extracted_final_answer: 42\n\nreasoning: matches\n\n**correct:** yes\n\nconfidence: 85%"
    verdict = parse_verdict(reply)
    assert (verdict.extracted_final_answer, verdict.reasoning, verdict.correct, verdict.confidence) == (
        "42",
        "matches",
        True,
        85.0,
    )


@pytest.mark.parametrize(
    "reply",
    [
        "correct: incorrect\nconfidence: 50",  # never substring-matched
        "correct: yes\nconfidence: 50\ncorrect: no",  # contradictory
        "correct: yes",  # no confidence
        "correct: yes\nconfidence: high",
        "The answer is correct.",
        "",
    ],
)
def test_malformed_text_reply_is_unparsable(reply):
    assert parse_verdict(reply) is None
