"""Runs judged by an LLM grader that failed on some samples: the unscored count is collected, stored and shown
beside the metric on the site and in ``summary.md``; each judge's headline matches its per-sample rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval

from mara_bench.harness.testing import scripted_model
from mara_bench.judges.registry import JUDGES, Headline, headline
from mara_bench.leaderboards.collect import read_run
from mara_bench.leaderboards.site import markdown_text, render_site
from mara_bench.leaderboards.store import HistoryStore

ROOT = Path(__file__).resolve().parents[2]
UNJUDGEABLE = ("Citibank", "Uranus")  # the grader's reply to these two questions is never a verdict


def _grader(messages, config):
    return "perhaps" if any(word in messages[-1].text for word in UNJUDGEABLE) else "yes"


@pytest.fixture
def judged_log(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    log = eval(
        f"{ROOT / 'tasks' / 'qa.py'}@bamboogle",
        task_args={"data": "samples", "judge": "equivalence"},
        model=scripted_model(lambda messages, config: "an answer"),
        model_roles={"grader": scripted_model(_grader, name="mockllm/grader")},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    return log.location


def test_unscored_samples_are_counted_and_shown_beside_the_metric(judged_log, tmp_path):
    record = read_run(judged_log)
    assert (record.headline_score, record.headline_metric) == ("equivalence", "accuracy")
    assert (record.n_samples, record.n_unscored) == (5, 2)
    assert {s.sample_id for s in record.samples if s.score == "equivalence"} == {"test_2", "test_3", "test_4"}

    store = HistoryStore(str(tmp_path / "history.sqlite"))
    assert store.add(record)
    (run,) = store.runs()
    assert (run.n_samples, run.n_unscored) == (5, 2)
    index = render_site(store, tmp_path / "site", run.night, [])
    store.close()
    summary = (tmp_path / "site" / "summary.md").read_text()
    assert "| metric | value | n | unscored |" in summary
    assert "| accuracy | 0.600 | 5 | 2 |" in summary
    assert '<td class="n">5<small class="unscored">2</small></td>' in index.read_text()


def test_markdown_text_keeps_quotes_readable():
    assert markdown_text("no common scored samples for score 'math'") == (
        "no common scored samples for score 'math'"
    )
    assert markdown_text('<b a="x">') == '&lt;b a="x"&gt;'


def test_every_judge_declares_its_headline():
    assert headline("math") == headline("hle") == headline("gaia") == Headline("correct", "accuracy")
    assert headline("simpleqa") == Headline("correct", "correct")
    assert headline("lexical") == Headline("em", "em")
    assert headline("lexical", variant="mask") == Headline("f1", "f1")
    assert set(JUDGES) == {"math", "hle", "gaia", "simpleqa", "lexical", "equivalence"}
