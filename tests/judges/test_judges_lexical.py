"""Lexical QA metrics: FlashRAG's EM / cover-EM / F1 with its yes/no rule, and M-ASK's variant."""

from __future__ import annotations

import pytest

from mara_bench.judges.lexical import normalize_answer, score


def test_normalize_answer():
    assert normalize_answer("  The  Eiffel-Tower, in   Paris! ") == "eiffeltower in paris"
    assert normalize_answer("An apple a day") == "apple day"


def test_exact_and_cover_match_over_golds():
    assert score("The Eiffel Tower", ["Eiffel Tower", "tour eiffel"]) == {
        "em": 1.0,
        "acc": 1.0,
        "f1": 1.0,
        "precision": 1.0,
        "recall": 1.0,
    }


def test_partial_overlap_f1_is_max_over_golds():
    # prediction tokens: barack obama junior; gold 1: obama (p=1/3, r=1, f1=0.5); gold 2: barack obama (p=2/3, r=1)
    result = score("Barack Obama junior", ["Obama", "Barack Obama"])
    assert result["em"] == 0.0
    assert result["acc"] == 1.0
    assert result["precision"] == pytest.approx(2 / 3)
    assert result["recall"] == 1.0
    assert result["f1"] == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))


def test_flashrag_yes_no_mismatch_scores_zero_f1_but_keeps_cover_em():
    # "yes it is" contains the gold "yes" (cover-EM 1) but is not exactly "yes": F1 skips that gold
    assert score("yes it is", ["yes"]) == {"em": 0.0, "acc": 1.0, "f1": 0.0, "precision": 0.0, "recall": 0.0}
    # prediction "no" vs a non-yes/no gold sharing the token: still skipped
    assert score("no", ["no way home"])["f1"] == 0.0
    assert score("yes", ["yes"])["f1"] == 1.0


def test_mask_variant_excludes_yes_no_items_from_f1():
    assert score("yes", ["no"], variant="mask") == {
        "em": 0.0,
        "acc": 0.0,
        "f1": None,
        "precision": None,
        "recall": None,
    }
    assert score("no", ["no"], variant="mask") == {
        "em": 1.0,
        "acc": 1.0,
        "f1": None,
        "precision": None,
        "recall": None,
    }


def test_mask_variant_scores_other_items_without_the_yes_no_skip():
    # "yes it is" vs "yes": an ordinary item for M-ASK, p = 1/3, r = 1, f1 = 0.5 (FlashRAG gives 0)
    result = score("yes it is", ["yes"], variant="mask")
    assert result["f1"] == pytest.approx(0.5)
    assert result["precision"] == pytest.approx(1 / 3)
    # a yes/no prediction against an entity gold is an ordinary (zero) item, not excluded
    assert score("yes", ["paris"], variant="mask")["f1"] == 0.0


def test_single_string_gold_and_bad_arguments():
    assert score("Paris", "paris")["em"] == 1.0
    with pytest.raises(ValueError, match="valid variants: flashrag, mask"):
        score("a", ["a"], variant="squad")
    with pytest.raises(ValueError, match="at least one gold"):
        score("a", [])


def test_mask_variant_special_answers_are_covered_only_by_themselves():
    # M-ASK's compute_scores: a yes/no/noanswer item scores acc and EM by exact match
    assert score("noanswer", ["no"], variant="mask")["acc"] == 0.0
    assert score("no", ["no", "yes"], variant="mask")["acc"] == 1.0
    assert (
        score("noanswer", ["no"], variant="flashrag")["acc"] == 1.0
    )  # FlashRAG's cover-EM is a substring test
