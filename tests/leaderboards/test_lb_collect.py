"""Collecting rows from real mock-model eval logs: identity, metrics with CIs, per-sample scores, bad logs."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import fsspec
import pytest
from inspect_ai import eval
from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries, write_eval_log

import mara_bench.leaderboards.run as run_module
from mara_bench.harness.task_metadata import TaskMetadata, dataset_hash
from mara_bench.harness.testing import scripted_model
from mara_bench.leaderboards.collect import SkippedLogWarning, collect, list_logs, read_run
from mara_bench.leaderboards.run import run_suite
from mara_bench.leaderboards.suite import parse_suite

ROOT = Path(__file__).resolve().parents[2]


def _by_identity(records):
    return {(r.checkpoint, r.system): r for r in records}


def test_rows_carry_identity_metrics_and_samples(eval_logs, xss_answer):
    rows = _by_identity(collect(str(eval_logs)))
    assert set(rows) == {("good", "direct"), ("good", "vc"), ("flaky", "direct"), ("flaky", "vc")}
    flaky = rows[("flaky", "direct")]
    assert (flaky.task, flaky.inspect_task, flaky.protocol, flaky.model) == (
        "arith",
        "arith",
        "quick",
        "lbmock/arith",
    )
    assert (flaky.judge, flaky.judge_model, flaky.night, flaky.suite) == (
        "final,solver",
        "lbmock/judge",
        "2026-01-01",
        "lbtest",
    )
    assert (flaky.headline_score, flaky.headline_metric) == ("final", "accuracy")
    # 8 of 40 wrong (i = 0, 5, ..., 35): accuracy 0.8, stderr sqrt(0.8 * 0.2 * 40 / 39) / sqrt(40) = sqrt(0.16 / 39);
    # Wilson 95%: centre (0.8 + z²/80) / (1 + z²/40), half-width z sqrt(0.16/40 + z²/6400) / (1 + z²/40)
    headline = flaky.headline
    assert headline.value == pytest.approx(0.8)
    assert headline.stderr == pytest.approx(math.sqrt(0.16 / 39))
    assert (headline.ci_low, headline.ci_high) == pytest.approx((0.65243, 0.89500), abs=1e-5)
    # all 40 right: Wilson is [40 / (40 + z²), 1], not the empty Wald interval [1, 1]
    good = rows[("good", "direct")].headline
    assert (good.value, good.ci_low, good.ci_high) == pytest.approx((1.0, 0.91238, 1.0), abs=1e-5)
    final = {s.sample_id: s for s in flaky.samples if s.score == "final"}
    assert len(final) == 40
    assert (final["q0"].value, final["q0"].answer) == (0.0, xss_answer)
    assert (final["q1"].value, final["q1"].answer) == (1.0, "2")
    assert sum(s.value for s in final.values()) == 32
    # the vc run: the solver's own answer keeps the 8 errors, the corrector ("fixer") repairs them
    vc = rows[("flaky", "vc")]
    assert {m.score: m.value for m in vc.metrics if m.metric == "accuracy"} == pytest.approx(
        {"final": 1.0, "solver": 0.8}
    )
    # every run evaluated the same 40 questions: one dataset hash; the log hash is the file's identity
    assert len({r.dataset_hash for r in rows.values()}) == 1
    # the mara-bench commit that ran the suite (Inspect records no git revision under pytest)
    assert len({r.code_version for r in rows.values()}) == 1
    assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?", flaky.code_version), flaky.code_version
    assert flaky.created.tzinfo is not None and flaky.created.year >= 2026
    assert len({r.log_hash for r in rows.values()}) == 4


def test_dataset_hash_changes_with_the_evaluated_set(eval_logs, tmp_path, make_suite):
    raw = make_suite()
    raw["checkpoints"] = raw["checkpoints"][:1]
    raw["comparisons"], raw["cross_solver"] = [], None
    raw["tasks"][0] |= {"args": {"n": 40, "start": 1}, "systems": ["direct"]}
    assert run_suite(parse_suite(raw), str(tmp_path), night="2026-01-02")
    shifted = next(collect(str(tmp_path)))
    original = _by_identity(collect(str(eval_logs)))[("good", "direct")]
    assert shifted.dataset_hash != original.dataset_hash


def test_corrupted_and_partial_logs_are_skipped_with_a_warning_naming_them(logs_copy):
    real = sorted(logs_copy.glob("*.eval"))[0]
    truncated = logs_copy / "2026-01-01T00-00-00-00-00_arith_truncated.eval"
    truncated.write_bytes(real.read_bytes()[: real.stat().st_size // 2])
    garbage = logs_copy / "2026-01-01T00-00-00-00-00_arith_garbage.json"
    garbage.write_text("{not json")
    unfinished = read_eval_log(str(real))
    unfinished.status = "started"
    unfinished_path = logs_copy / "2026-01-01T00-00-00-00-00_arith_unfinished.eval"
    write_eval_log(unfinished, str(unfinished_path))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = list(collect(str(logs_copy)))
    assert len(rows) == 4
    messages = [str(w.message) for w in caught if issubclass(w.category, SkippedLogWarning)]
    assert len(messages) == 3
    for path in (truncated, garbage, unfinished_path):
        assert sum(path.name in m for m in messages) == 1, messages
    assert any("status is 'started'" in m for m in messages)


def test_logs_are_read_from_an_fsspec_url(eval_logs):
    memory = fsspec.filesystem("memory")
    for path in Path(eval_logs).glob("*.eval"):
        memory.pipe(f"/lb-url-test/{path.name}", path.read_bytes())
    urls = list_logs("memory://lb-url-test")
    assert len(urls) == 4 and all(u.startswith("memory://") for u in urls)
    from_url = sorted((r.checkpoint, r.system, r.log_hash) for r in collect("memory://lb-url-test"))
    from_disk = sorted((r.checkpoint, r.system, r.log_hash) for r in collect(str(eval_logs)))
    assert from_url == from_disk


def test_read_run_names_the_problem(tmp_path):
    bad = tmp_path / "x.eval"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match="cannot be read"):
        read_run(str(bad))


def test_code_version_without_git_is_the_package_version(monkeypatch):
    def no_git(*_args):
        raise FileNotFoundError("git")

    monkeypatch.setattr(run_module, "_git", no_git)
    assert re.fullmatch(r"mara-bench \d+\.\d+\.\d+\S*", run_module.code_version())


def test_the_harness_records_the_dataset_hash_and_older_logs_compute_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    log = eval(
        f"{ROOT / 'tasks' / 'qa.py'}@bamboogle",
        task_args={"data": "samples"},
        model=scripted_model(lambda messages, config: "an answer"),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    recorded = TaskMetadata.read(log.eval.metadata)
    assert recorded.dataset_hash == dataset_hash(read_eval_log_sample_summaries(log.location))
    assert (recorded.system, recorded.judge) == ("direct", read_run(log.location).judge)
    assert read_run(log.location).dataset_hash == recorded.dataset_hash

    older = read_eval_log(log.location)
    del older.eval.metadata["dataset_hash"]  # a log written before the harness recorded it
    write_eval_log(older, str(tmp_path / "older.eval"))
    assert read_run(str(tmp_path / "older.eval")).dataset_hash == recorded.dataset_hash
