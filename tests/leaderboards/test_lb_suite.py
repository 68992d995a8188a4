"""Suite files: the shipped ones load, bad ones fail naming the field, and the smoke suite runs offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mara_bench.harness.toolcache import open_store
from mara_bench.leaderboards.cli import main
from mara_bench.leaderboards.run import build_tasks
from mara_bench.leaderboards.store import HistoryStore
from mara_bench.leaderboards.suite import SuiteError, load_suite, parse_suite

ROOT = Path(__file__).resolve().parents[2]

SUITES = Path(__file__).resolve().parents[2] / "leaderboards" / "suites"


@pytest.mark.parametrize("name", ["smoke", "nightly", "external", "cross_solver", "role_adapters"])
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
            r"checkpoints\[0\]\.temprature: unknown key; valid keys under checkpoints\[0\]: model, model_args",
        ),
        (lambda s: s.update(extra=1), r"^bad.yaml: extra: unknown key; valid keys: checkpoints"),
        (lambda s: s.update(source="x"), r"source: unknown key"),  # set by load_suite, never by the file
        (lambda s: s["checkpoints"][0].pop("model"), r"checkpoints\[0\]\.model: required; add it"),
        (lambda s: s.update(checkpoints=[]), r"checkpoints: needs at least 1 item"),
        (lambda s: s["checkpoints"][0].update(name=" "), r"checkpoints\[0\]\.name: must not be blank"),
        (
            lambda s: s["comparisons"].append({"candidate": "nope", "baseline": "good"}),
            r"comparisons\[1\]\.candidate: unknown checkpoint 'nope'; declared: flaky, good$",
        ),
        (lambda s: s["cross_solver"].update(tasks=["hle"]), "cross_solver.tasks: unknown task 'hle'"),
        (lambda s: s["settings"].update(alpha=5), "settings.alpha: must be < 1, got 5"),
        (
            lambda s: s["settings"].update(correction="bonferroni"),
            "settings.correction: 'bonferroni' is not a valid choice; choose one of holm, bh",
        ),
        (lambda s: s["settings"]["eval"].update(model="x"), r"settings\.eval\.model: unknown key"),
        (
            lambda s: s["settings"]["eval"].update(limt=3),
            r"settings\.eval\.limt: unknown key; did you mean 'limit'\?",
        ),
        (lambda s: s["settings"]["eval"].update(limit=0), r"settings\.eval\.limit: must be >= 1, got 0"),
        (
            lambda s: s["settings"]["eval"].update(log_format="yaml"),
            r"settings\.eval\.log_format: 'yaml' is not a valid choice",
        ),
        (
            lambda s: s["tasks"][0]["args"].update(system="vc"),
            r"tasks\[0\]\.args\.system: not an arg here; set 'system' with 'systems",
        ),
        (lambda s: s["tasks"][0].update(task="tasks/aime.py"), "file.py@task_name"),
        (
            lambda s: s["tasks"][0].update(systems=["dirct"]),
            r"tasks\[0\]\.systems: unknown system 'dirct'; did you mean 'direct'\?",
        ),
        (
            lambda s: s["tasks"][0].update(protocols=["marsrll"]),
            r"tasks\[0\]\.protocols: unknown protocol 'marsrll'; did you mean 'marsrl'\?",
        ),
        (lambda s: s["checkpoints"].append(dict(s["checkpoints"][0])), "checkpoints: duplicate name"),
    ],
)
def test_bad_suites_name_what_to_fix(make_suite, patch, message):
    raw = make_suite()
    patch(raw)
    with pytest.raises(SuiteError, match=message) as caught:
        parse_suite(raw, source=Path("bad.yaml"))
    assert str(caught.value).startswith("bad.yaml: ") and "\n" not in str(caught.value)


def test_a_task_name_defaults_to_its_function_and_nulls_mean_the_default_system(make_suite):
    raw = make_suite()
    raw["tasks"][0].pop("name")
    raw["tasks"][0]["systems"] = [None]
    task = parse_suite(raw).tasks[0]
    assert (task.name, task.systems, task.protocols) == ("arith", (None,), (None,))


def test_a_yaml_syntax_error_names_the_suite_file_and_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: x\ncheckpoints: [\n  {name: a\n")
    with pytest.raises(SuiteError, match=rf"^{path}:\d+: YAML syntax error: "):
        load_suite(path)


def test_the_cli_prints_one_line_for_a_bad_suite(tmp_path, make_suite, capsys):
    raw = make_suite()
    raw["settings"]["eval"]["limt"] = 3
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main([str(path), "--out", str(tmp_path / "out"), "--display", "none"]) == 2
    err = capsys.readouterr().err
    assert err == f"mara nightly: {path}: settings.eval.limt: unknown key; did you mean 'limit'? " + (
        "valid keys: epochs, fail_on_error, limit, log_format, max_connections, max_samples, max_tasks, "
        "max_tokens, retry_attempts, temperature\n"
    )
    assert not (tmp_path / "out").exists()


def test_missing_task_file_is_a_clear_error(tmp_path, make_suite):
    raw = make_suite()
    raw["tasks"][0]["task"] = "no/such/file.py@arith"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main([str(path), "--out", str(tmp_path / "out"), "--display", "none"]) == 2


@pytest.mark.slow
def test_smoke_suite_runs_offline_on_the_tiny_model(tmp_path, monkeypatch):
    from mara_bench.harness.tinymodel import build_tiny_model

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


def test_a_suite_pins_its_tool_using_runs_to_a_snapshot_and_an_unknown_one_stops_it(tmp_path):
    """``settings.tools`` reaches every tool-using system's task as ``-T tool_cache/tool_snapshot/tool_store``
    (recorded in the task metadata); a tool-less system is left alone; a snapshot the store lacks is one line."""
    store = open_store(str(tmp_path / "store"), create=True)
    store.ensure_snapshot("web-1")
    store.freeze("web-1")
    raw = {
        "name": "pinned",
        "checkpoints": [{"name": "m", "model": "mockllm/model"}],
        "tasks": [
            {
                "name": "bamboogle",
                "task": f"{ROOT}/tasks/qa.py@bamboogle",
                "args": {"data": "samples", "limit": 1},
                "systems": ["direct", "mars"],
            }
        ],
        "settings": {"tools": {"snapshot": "web-1", "store": str(tmp_path / "store")}},
    }
    direct, mars = build_tasks(parse_suite(raw), "2026-11-26")
    assert direct.metadata["tool_cache"] is None
    assert mars.metadata["tool_cache"]["mode"] == "replay"
    assert mars.metadata["tool_cache"]["snapshot"] == "web-1" and mars.metadata["tool_cache"]["frozen"]

    raw["settings"]["tools"]["snapshot"] = "web-9"
    with pytest.raises(ValueError, match=r"no snapshot 'web-9' \(snapshots: web-1\)") as caught:
        build_tasks(parse_suite(raw), "2026-11-26")
    assert "\n" not in str(caught.value)
    raw["settings"]["tools"]["cache"] = "sometimes"
    with pytest.raises(SuiteError, match=r"settings.tools.cache"):
        parse_suite(raw)
