"""Protocol presets, reducer parsing and the maj@k reducer on hand-built epoch scores."""

from __future__ import annotations

import math

import pytest
from inspect_ai.scorer import Score
from inspect_ai.scorer._reducer.registry import reducer_log_names

from mara_bench.harness.protocols import PROTOCOLS, get_protocol, majority_answer, make_reducers


def test_presets_carry_the_papers_settings():
    marsrl = get_protocol("marsrl")
    assert (marsrl.epochs, marsrl.reducers, marsrl.judge) == (32, ("avg@32",), "math")
    assert (marsrl.generate.temperature, marsrl.generate.top_p) == (0.6, 0.95)
    assert marsrl.system_settings == {"max_iterations": 10, "accept_after": 4}
    mars = get_protocol("mars")
    assert (mars.judge, mars.judge_model) == ("hle", "openai/gpt-4o")
    assert mars.system_settings == {  # issue 13: the paper's per-system budgets are the protocol's defaults
        "max_turns": 10,
        "sys1_budget": 23552,
        "s1_max_tokens": 8192,
        "s2_max_tokens": 28672,
    }
    matpo = get_protocol("matpo")
    assert (matpo.epochs, matpo.generate.temperature, matpo.judge, matpo.judge_model) == (
        8,
        1.0,
        "simpleqa",
        "openai/gpt-4o-mini",
    )
    mask = get_protocol("mask")
    assert (mask.judge, dict(mask.judge_options), mask.system_settings) == (
        "lexical",
        {"variant": "mask"},
        {"max_iterations": 5},
    )
    quick = get_protocol("quick")
    assert (quick.epochs, quick.generate.max_tokens) == (1, 512)
    assert get_protocol(None).name == "default"


def test_unknown_protocol_lists_valid_ones():
    with pytest.raises(
        ValueError, match=r"unknown protocol 'marsr'; valid: default, mars, marsrl, .*did you mean 'marsrl'\?"
    ):
        get_protocol("marsr")
    assert set(PROTOCOLS) == {"default", "marsrl", "mars", "matpo", "mask", "quick"}


def test_epoch_override_moves_avg_and_maj_to_the_new_k():
    overridden = get_protocol("marsrl").with_overrides(epochs=4)
    assert (overridden.epochs, overridden.reducers) == (4, ("avg",))
    assert overridden.epochs_spec().epochs == 4
    explicit = get_protocol("quick").with_overrides(epochs=8, reducers="avg@8,pass@1,pass@4,maj@8")
    assert reducer_log_names(explicit.epochs_spec().reducer) == ["mean", "pass_at_1", "pass_at_4", "maj_at_k"]


@pytest.mark.parametrize(
    ("names", "epochs", "message"),
    [
        ("pass@5", 4, r"needs 1 <= k <= epochs \(4\)"),
        ("avg@8", 4, r"k must equal epochs \(4\)"),
        ("median", 4, r"unknown reducer 'median'; valid reducers: avg@k"),
        ("", 4, "names no reducer"),
    ],
)
def test_bad_reducers_are_rejected(names, epochs, message):
    with pytest.raises(ValueError, match=message):
        make_reducers(names, epochs)


@pytest.mark.parametrize("epochs", [0, -1, "many", True])
def test_bad_epochs_are_rejected(epochs):
    with pytest.raises(ValueError, match="must be a positive integer"):
        get_protocol("quick").with_overrides(epochs=epochs)


def _score(value: float | str | dict[str, float], answer: str | None) -> Score:
    return Score(value=value, answer=answer)


def test_majority_answer_takes_the_value_of_the_most_common_answer():
    reduce = majority_answer()
    scores = [_score(0, "5"), _score(1, "70"), _score(0, "5"), _score(1, "70"), _score(0, "5")]
    reduced = reduce(scores)
    assert (reduced.value, reduced.answer) == (0, "5")
    assert reduced.metadata["votes"] == {"5": 3, "70": 2}


def test_majority_ties_go_to_the_answer_that_sorts_first_whatever_the_epoch_order():
    forward = [_score("I", "9"), _score("C", "16"), _score("I", "9"), _score("C", "16")]
    for scores in (forward, list(reversed(forward))):
        reduced = majority_answer()(scores)
        assert (reduced.value, reduced.answer) == ("C", "16")


def test_majority_ignores_unscored_epochs_and_counts_missing_answers_as_a_vote():
    reduce = majority_answer()
    scores = [_score(math.nan, None), _score(0, None), _score(0, None), _score(1, "4")]
    reduced = reduce(scores)
    assert (reduced.value, reduced.answer, reduced.metadata["votes"]) == (0, None, {"": 2, "4": 1})
    all_unscored = reduce([_score(math.nan, None), _score(math.nan, "3")])
    assert math.isnan(all_unscored.value)


def test_majority_skips_llm_judge_attempts_left_unscored():
    """A dict score with ``judged_correct`` NaN is an unscored attempt: it neither votes nor wins."""
    unscored = {"correct": 0.0, "judged_correct": math.nan}
    scores = [
        _score(unscored, "7"),
        _score(unscored, "7"),
        _score({"correct": 1.0, "judged_correct": 1.0}, "5"),
    ]
    reduced = majority_answer()(scores)
    assert (reduced.value, reduced.answer, reduced.metadata["votes"]) == (scores[2].value, "5", {"5": 1})
    every_epoch_unscored = majority_answer()(scores[:2])
    assert every_epoch_unscored.value["correct"] == 0.0  # same shape, so the verdict metrics still read it
    assert math.isnan(every_epoch_unscored.value["judged_correct"])
