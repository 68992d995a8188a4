"""Suite files: the shipped ones load, bad ones fail naming the field, and the smoke suite runs offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from leaderboards.cli import main
from leaderboards.store import HistoryStore
from leaderboards.suite import SuiteError, load_suite, parse_suite

SUITES = Path(__file__).resolve().parents[2] / "leaderboards" / "suites"


@pytest.mark.parametrize("name", ["smoke", "nightly", "external", "cross_solver"])
def test_shipped_suites_load(name):
    suite = load_suite(SUITES / f"{name}.yaml")
    assert suite.name == name and suite.checkpoints and suite.tasks
    assert all(Path(SUITES.parents[1] / t.task.split("@")[0]).is_file() for t in suite.tasks)


def test_cross_solver_suite_pairs_one_trained_vc_with_several_solvers():
    suite = load_suite(SUITES / "cross_solver.yaml")
    rows = [suite.checkpoint(name) for name in suite.cross_solver.checkpoints]
    assert len({c.model for c in rows}) == len(rows) >= 3
    assert len({(c.roles["verifier"], c.roles["corrector"]) for c in rows}) == 1


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            lambda s: s["checkpoints"][0].update(temprature=1),
            r"checkpoints\[0\]: unknown key\(s\) 'temprature'",
        ),
        (lambda s: s.update(extra=1), r"unknown key\(s\) 'extra'"),
        (lambda s: s["checkpoints"][0].pop("model"), r"checkpoints\[0\]: missing required key\(s\) 'model'"),
        (
            lambda s: s["comparisons"].append({"candidate": "nope", "baseline": "good"}),
            "unknown checkpoint 'nope'",
        ),
        (lambda s: s["cross_solver"].update(tasks=["hle"]), "cross_solver.tasks: unknown task 'hle'"),
        (lambda s: s["settings"].update(alpha=5), "settings.alpha"),
        (lambda s: s["settings"].update(correction="bonferroni"), "settings.correction"),
        (lambda s: s["settings"]["eval"].update(model="x"), r"settings.eval: unknown key\(s\) 'model'"),
        (lambda s: s["tasks"][0]["args"].update(system="vc"), "set 'system' with 'systems"),
        (lambda s: s["tasks"][0].update(task="tasks/aime.py"), "file.py@task_name"),
        (lambda s: s["checkpoints"].append(dict(s["checkpoints"][0])), "duplicate name"),
    ],
)
def test_bad_suites_name_what_to_fix(make_suite, patch, message):
    raw = make_suite()
    patch(raw)
    with pytest.raises(SuiteError, match=message):
        parse_suite(raw, source=Path("bad.yaml"))


def test_missing_task_file_is_a_clear_error(tmp_path, make_suite):
    raw = make_suite()
    raw["tasks"][0]["task"] = "no/such/file.py@arith"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main([str(path), "--out", str(tmp_path / "out"), "--display", "none"]) == 2


@pytest.mark.slow
def test_smoke_suite_runs_offline_on_the_tiny_model(tmp_path, monkeypatch):
    from harness.tinymodel import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    raw = yaml.safe_load((SUITES / "smoke.yaml").read_text())
    raw["checkpoints"][0]["model"] = f"local/{model}"
    suite = tmp_path / "smoke.yaml"
    suite.write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(SUITES.parents[1])
    assert (
        main([str(suite), "--out", str(tmp_path / "out"), "--night", "2026-01-01", "--display", "none"]) == 0
    )
    runs = HistoryStore(str(tmp_path / "out" / "history.sqlite")).runs()
    assert sorted((r.task, r.protocol, r.n_samples) for r in runs) == [
        ("aime2025", "quick", 5),
        ("bamboogle", "quick", 5),
    ]
    assert {r.judge for r in runs} == {"math", "lexical"}
