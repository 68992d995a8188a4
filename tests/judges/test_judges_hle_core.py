"""HLE judge core: the official calibration error, Wald half-width and strict parsing of judge replies."""

from __future__ import annotations

import json
import logging
import math
import random
from pathlib import Path

import pytest

from mara_bench.judges.hle import (
    DEFAULT_BIN_SIZE,
    RESPONSE_SCHEMA,
    calibration_error,
    calibration_undefined_reason,
    clamped_confidence,
    confidence_out_of_range,
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


def test_all_bins_calibration_on_250_items_is_inspect_evals_cerr():
    # inspect_evals: bins [0,100) and [100,250) (the last absorbs the remainder), both used, weights 0.4 and 0.6;
    # second bin: mean confidence (100 * .6 + 50 * .9) / 150 = .7 vs accuracy 100 / 150
    confidences, correct = _items(GROUPS_250)
    expected = math.sqrt(0.4 * 0.2**2 + 0.6 * (0.7 - 100 / 150) ** 2)
    assert calibration_error(confidences, correct, method="all_bins") == pytest.approx(expected)


def test_all_bins_calibration_below_one_bin_uses_one_bin_of_everything():
    # bin size min(100, n): 150 items are one bin of 100 stretched to 150; 40 items are one bin of 40
    confidences, correct = _items([(100, 20.0, 0), (50, 90.0, 50)])
    expected = abs((100 * 0.2 + 50 * 0.9) / 150 - 50 / 150)
    assert calibration_error(confidences, correct, method="all_bins") == pytest.approx(expected)
    assert calibration_error([70.0] * 40, [True] * 10 + [False] * 30, method="all_bins") == pytest.approx(
        0.45
    )


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
        {"extracted_final_answer": "4", "reasoning": "r", "confidence": 35},
        {"reasoning": "r", "correct": "yes", "confidence": 35},
    ],
)
def test_malformed_structured_reply_is_unparsable(reply):
    assert parse_verdict(json.dumps(reply)) is None


@pytest.mark.parametrize(
    ("confidence", "read_as"),
    [("85", 85.0), (85.0, 85.0), ("85%", 85.0), (150, 150.0), (-5, -5.0), (None, None), ("high", None)],
)
def test_structured_reply_confidence_is_read_as_the_official_script_reads_it(confidence, read_as):
    reply = {"extracted_final_answer": "4", "reasoning": "r", "correct": "yes", "confidence": confidence}
    verdict = parse_verdict(json.dumps(reply))
    assert verdict is not None and verdict.correct is True  # a clear verdict is never lost to its confidence
    assert verdict.confidence == read_as
    del reply["confidence"]
    assert parse_verdict(json.dumps(reply)).confidence is None


def test_out_of_range_confidence_is_clamped_and_flagged():
    assert [clamped_confidence(c) for c in (150.0, -5.0, 85.0)] == [100.0, 0.0, 85.0]
    assert [confidence_out_of_range(c) for c in (150.0, -5.0, 85.0, None)] == [True, True, False, False]


def _messy_replies(n: int = 300) -> list[tuple[str, bool]]:
    """``n`` JSON judge replies as real graders send them, with whether the verdict is "yes"; about a fifth send
    the confidence as a string, a float or a value over 100."""
    rng = random.Random(9)
    replies = []
    for i in range(n):
        correct = rng.random() < 0.4
        confidence: object = rng.randint(0, 100)
        style = rng.random()
        if style < 0.08:
            confidence = str(confidence)
        elif style < 0.15:
            confidence = float(confidence)
        elif style < 0.21:
            confidence = rng.choice([101, 120, 150, 200])
        reply = {
            "extracted_final_answer": f"answer {i}",
            "reasoning": "compared with the correct answer",
            "correct": "yes" if correct else "no",
            "confidence": confidence,
        }
        replies.append((json.dumps(reply), correct))
    return replies


def test_hle_accuracy_on_300_messy_replies_equals_the_official_reading():
    replies = _messy_replies()
    official = sum(correct for _, correct in replies) / len(replies)  # the official parse accepts every one
    verdicts = [parse_verdict(reply) for reply, _ in replies]
    assert all(v is not None for v in verdicts)
    ours = sum(v.correct for v in verdicts) / len(replies)
    assert ours == official
    assert sum(confidence_out_of_range(v.confidence) for v in verdicts) > 0


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
        "The answer is correct.",
        "",
    ],
)
def test_malformed_text_reply_is_unparsable(reply):
    assert parse_verdict(reply) is None


def test_text_reply_with_a_clear_verdict_and_no_usable_confidence_is_scored():
    for reply in ("correct: yes", "correct: yes\nconfidence: high"):
        verdict = parse_verdict(reply)
        assert (verdict.correct, verdict.confidence) == (True, None)
    assert parse_verdict("correct: no\nconfidence: 150").confidence == 150.0


_REFERENCE_VECTORS = json.loads((Path(__file__).parent / "vectors" / "hle_calibration.json").read_text())


@pytest.mark.parametrize("case", _REFERENCE_VECTORS["cases"], ids=lambda case: f"n{len(case['confidence'])}")
def test_calibration_equals_each_reference_bit_for_bit_ties_included(case):
    # computed by running the official calib_err and inspect_evals' cerr (see the file's "source")
    assert calibration_error(case["confidence"], case["correct"], method="all_bins") == case["all_bins"]
    if len(case["confidence"]) >= 2 * DEFAULT_BIN_SIZE:  # below that the official number is undefined here
        assert calibration_error(case["confidence"], case["correct"]) == case["official"]


def test_an_undefined_calibration_is_said_once_per_process(monkeypatch, caplog):
    from inspect_ai.scorer import SampleScore, Score

    from mara_bench.judges import metrics

    monkeypatch.setattr(metrics, "_warned", set())
    scores = [
        SampleScore(
            sample_id=i,
            score=Score(value={"confidence": 80.0, "judged_correct": 1.0, "confidence_out_of_range": 0.0}),
        )
        for i in range(3)
    ]
    compute = metrics.calibration()
    with caplog.at_level(logging.WARNING, logger=metrics.__name__):
        for _ in range(4):  # Inspect computes it per scorer and per reducer
            assert math.isnan(compute(scores)["calibration_error"])
    assert [record.getMessage() for record in caplog.records] == [calibration_undefined_reason(3)]
