"""``mara nightly`` end to end: real evals through eval-set, resumable, regression → exit code 1, bad suite → 2."""

from __future__ import annotations

from pathlib import Path

from leaderboards.cli import main


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


def test_bad_suite_exits_2_naming_the_problem(tmp_path, capsys):
    suite = Path(tmp_path / "bad.yaml")
    suite.write_text("name: x\ncheckpoints: [{name: a, model: m, temprature: 1}]\ntasks: [{task: t.py@t}]\n")
    assert main([str(suite), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert "checkpoints[0]" in error and "'temprature'" in error
