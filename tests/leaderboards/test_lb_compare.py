"""Comparisons on real eval logs: checkpoint pairs, previous nights, and runs that are not comparable."""

from __future__ import annotations

import pytest

from mara_bench.leaderboards.compare import (
    NO_REGRESSION,
    NOT_COMPARABLE,
    REGRESSION,
    compare_pair,
    natural_key,
    nightly_comparisons,
)
from mara_bench.leaderboards.store import HistoryStore
from mara_bench.leaderboards.suite import parse_suite


@pytest.fixture
def store(eval_logs, tmp_path) -> HistoryStore:
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    store.ingest(str(eval_logs))
    return store


def _run(store, checkpoint, system):
    return store.runs(checkpoint=checkpoint, system=system)[0]


def test_suite_pairs_flag_the_significant_drop_only(store, make_suite, xss_answer):
    comparisons = nightly_comparisons(store, "2026-01-01", parse_suite(make_suite()))
    by_system = {c.candidate.system: c for c in comparisons}
    assert set(by_system) == {"direct", "vc"} and all(c.kind == "checkpoint pair" for c in comparisons)
    direct, vc = by_system["direct"], by_system["vc"]
    # flaky loses 8 of 40 that good gets right, gains none: p = 2^-8, Holm over the 2 comparisons doubles it
    assert direct.status == REGRESSION
    assert direct.test.p_value == pytest.approx(2**-8)
    assert direct.p_adjusted == pytest.approx(2 * 2**-8)
    assert direct.test.delta == pytest.approx(-0.2)
    # sample ids in natural order (q5 before q10), as the site lists them
    assert [f.sample_id for f in direct.flips] == ["q0", "q5", "q10", "q15", "q20", "q25", "q30", "q35"]
    assert {f.candidate_answer for f in direct.flips} == {xss_answer}
    # with the corrector the final answers are all right again: identical scores, no regression
    assert vc.status == NO_REGRESSION and vc.test.delta == 0 and vc.test.p_value == 1.0


def test_min_effect_turns_a_small_significant_drop_into_no_regression(store, make_suite):
    raw = make_suite()
    raw["settings"]["min_effect"] = 0.25
    comparisons = nightly_comparisons(store, "2026-01-01", parse_suite(raw))
    assert {c.status for c in comparisons} == {NO_REGRESSION}


def test_changed_dataset_or_judge_is_not_comparable(store):
    candidate, baseline = _run(store, "flaky", "direct"), _run(store, "good", "direct")
    candidate.dataset_hash = "0" * 16
    changed_data = compare_pair(store, candidate, baseline, "checkpoint pair")
    assert changed_data.status == NOT_COMPARABLE and "dataset changed" in changed_data.reason
    assert changed_data.test is None

    candidate = _run(store, "flaky", "direct")
    candidate.judge_model = "openai/o3-mini"
    changed_judge = compare_pair(store, candidate, baseline, "checkpoint pair")
    assert changed_judge.status == NOT_COMPARABLE and "judge changed" in changed_judge.reason


def test_the_first_night_has_no_previous_night(store):
    assert nightly_comparisons(store, "2026-01-01") == []


def test_sample_ids_sort_naturally():
    ids = ["q10", "q5", "item-2-10", "item-2-9", "q05b", "b", "a1"]
    assert sorted(ids, key=natural_key) == ["a1", "b", "item-2-9", "item-2-10", "q5", "q05b", "q10"]
