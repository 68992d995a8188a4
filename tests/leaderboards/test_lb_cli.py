"""``mara nightly`` end to end: real evals through eval-set, resumable (a failed task is the only one re-run),
regression → exit code 1, bad suite → 2."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from mara_bench.leaderboards.cli import main
from mara_bench.leaderboards.collect import SkippedLogWarning
from mara_bench.leaderboards.site import markdown_text
from mara_bench.leaderboards.store import HistoryStore


def _one_checkpoint_suite(make_suite, wrong_every: int) -> dict:
    raw = make_suite(wrong_every=wrong_every)
    raw["checkpoints"] = raw["checkpoints"][1:]  # "flaky" only
    raw["tasks"][0]["systems"] = ["direct"]
    raw["comparisons"], raw["cross_solver"] = [], None
    return raw


def test_nightly_runs_resumes_and_flags_a_regression(tmp_path, make_suite, capsys):
    import yaml

    out = tmp_path / "out"
    suite = tmp_path / "suite.yaml"
    argv = [str(suite), "--out", str(out), "--display", "none"]

    suite.write_text(yaml.safe_dump(_one_checkpoint_suite(make_suite, wrong_every=0)))
    assert main(argv + ["--night", "2026-01-01"]) == 0

    suite.write_text(yaml.safe_dump(_one_checkpoint_suite(make_suite, wrong_every=5)))
    assert main(argv + ["--night", "2026-01-02"]) == 1
    printed = capsys.readouterr().out
    assert "REGRESSION flaky arith direct quick previous night: -20.0 pts" in printed
    night_logs = sorted((out / "logs" / "2026-01-02").glob("*.eval"))
    assert len(night_logs) == 1

    # a second call the same night runs nothing new and ingests nothing new
    assert main(argv + ["--night", "2026-01-02"]) == 1
    assert sorted((out / "logs" / "2026-01-02").glob("*.eval")) == night_logs
    assert "ingested 0 new log(s)" in capsys.readouterr().out

    summary = (out / "site" / "summary.md").read_text()
    assert "**1 regression**" in summary and "previous night: flaky (2026-01-01)" in summary
    assert (out / "site" / "index.html").is_file() and (out / "history.sqlite").is_file()

    # the same night compared against explicit baseline logs instead of the previous night
    assert (
        main(argv + ["--night", "2026-01-02", "--no-run", "--baseline", str(out / "logs" / "2026-01-01")])
        == 1
    )
    assert "baseline logs" in capsys.readouterr().out


def test_a_second_call_runs_only_the_task_that_did_not_finish(tmp_path, make_suite, capsys):
    import yaml

    raw = make_suite()
    raw["tasks"][0]["systems"] = ["direct"]
    raw["comparisons"], raw["cross_solver"] = [], None
    released = tmp_path / "api-is-back"
    raw["checkpoints"][1]["model_args"] = {"fail_until": str(released)}  # "flaky" errors until released
    raw["settings"]["eval"] |= {"retry_attempts": 0}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    argv = [str(suite), "--out", str(out), "--display", "none", "--night", "2026-01-01"]
    night = out / "logs" / "2026-01-01"

    with pytest.warns(SkippedLogWarning) as skipped:
        assert main(argv) == 3  # no regression, but a task did not finish: CI must notice
    first = capsys.readouterr()
    assert "some tasks did not finish; run again to resume" in first.err
    assert "ingested 1 new log(s)" in first.out
    failed = {_checkpoint(p): p for p in night.glob("*.eval")}
    good_log = failed["good"]
    assert read_eval_log(str(failed["flaky"]), header_only=True).status == "error"
    skipped_messages = [str(w.message) for w in skipped if w.category is SkippedLogWarning]
    assert len(skipped_messages) == 1 and failed["flaky"].name in skipped_messages[0]
    assert "status is 'error'" in skipped_messages[0]
    good_before = good_log.stat().st_mtime_ns, good_log.read_bytes()

    released.touch()
    assert main(argv) == 0
    assert "ingested 1 new log(s)" in capsys.readouterr().out
    finished = [
        p for p in night.glob("*.eval") if read_eval_log(str(p), header_only=True).status == "success"
    ]
    assert sorted(_checkpoint(p) for p in finished) == ["flaky", "good"]
    # the finished task was not run again: its log is the same file, untouched
    assert good_log in finished and (good_log.stat().st_mtime_ns, good_log.read_bytes()) == good_before
    runs = HistoryStore(str(out / "history.sqlite")).runs()
    assert sorted((r.checkpoint, r.headline_value) for r in runs) == [("flaky", 1.0), ("good", 1.0)]


def test_a_changed_judge_or_dataset_is_not_comparable_not_a_regression(tmp_path, make_suite, capsys):
    import yaml

    suite = tmp_path / "suite.yaml"
    out = tmp_path / "out"
    argv = [str(suite), "--out", str(out), "--display", "none"]
    raw = _one_checkpoint_suite(make_suite, wrong_every=0)
    suite.write_text(yaml.safe_dump(raw))
    assert main(argv + ["--night", "2026-01-01"]) == 0

    # night 2: 8 of 40 wrong (a 20-point drop), but graded by another judge model
    raw = _one_checkpoint_suite(make_suite, wrong_every=5)
    raw["checkpoints"][0]["roles"]["grader"] = "lbmock/judge-v2"
    suite.write_text(yaml.safe_dump(raw))
    assert main(argv + ["--night", "2026-01-02"]) == 0
    assert "1 comparison(s), 0 regression(s)" in capsys.readouterr().out
    summary = (out / "site" / "summary.md").read_text()
    reason = "judge changed (final,solver / lbmock/judge → final,solver / lbmock/judge-v2)"
    assert f"- flaky / arith / direct: {markdown_text(reason)}" in summary

    # night 3: same judge as night 2, all wrong answers again, on another question set (ids q1..q40)
    raw["checkpoints"][0]["model_args"]["wrong_every"] = 1
    raw["tasks"][0]["args"]["start"] = 1
    suite.write_text(yaml.safe_dump(raw))
    assert main(argv + ["--night", "2026-01-03"]) == 0
    assert "1 comparison(s), 0 regression(s)" in capsys.readouterr().out
    summary = (out / "site" / "summary.md").read_text()
    assert "Not comparable:" in summary
    assert f"- flaky / arith / direct: {markdown_text('dataset changed (hash ')}" in summary


def _checkpoint(log: Path) -> str:
    return read_eval_log(str(log), header_only=True).eval.metadata["checkpoint"]


def test_bad_suite_exits_2_naming_the_problem(tmp_path, capsys):
    suite = Path(tmp_path / "bad.yaml")
    suite.write_text("name: x\ncheckpoints: [{name: a, model: m, temprature: 1}]\ntasks: [{task: t.py@t}]\n")
    assert main([str(suite), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert "checkpoints[0].temprature: unknown key" in error


def test_an_unfinished_log_of_an_earlier_night_is_quarantined_once(tmp_path, make_suite, capsys):
    import yaml

    suite, out = tmp_path / "suite.yaml", tmp_path / "out"
    suite.write_text(yaml.safe_dump(_one_checkpoint_suite(make_suite, wrong_every=0)))
    killed = out / "logs" / "2026-01-01" / "killed.eval"  # a run killed mid-write leaves a cut archive
    tonight = out / "logs" / "2026-01-02" / "resumable.eval"
    for log in (killed, tonight):
        log.parent.mkdir(parents=True)
        log.write_bytes(b"PK\x03\x04" + bytes(100))
    argv = [str(suite), "--out", str(out), "--no-run", "--night", "2026-01-02"]
    with pytest.warns(SkippedLogWarning):
        assert main(argv) == 0
    assert "moved 1 unfinished log(s) of earlier nights" in capsys.readouterr().err
    assert not killed.exists() and (out / "quarantine" / "2026-01-01" / "killed.eval").is_file()
    assert tonight.is_file()  # tonight's stays for a rerun to resume
    tonight.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedLogWarning)
        assert main(argv) == 0  # no warning on the next run


def test_folders_a_failed_run_made_are_removed_when_left_empty(tmp_path):
    from mara_bench.leaderboards.cli import removed_if_left_empty

    night = tmp_path / "out" / "logs" / "2026-01-01"
    with pytest.raises(RuntimeError), removed_if_left_empty(night):
        assert night.is_dir()
        raise RuntimeError("eval-set failed")
    assert not (tmp_path / "out").exists() and tmp_path.is_dir()
