"""A 2 x 2 MATPO role matrix (base/trained planner x base/trained worker) through ``mara nightly``: the scripted roles
(``role_key``) make the planner's variant matter and the worker's not, and the site's matrix table says so with
paired differences and 95% CIs, in headless Chromium. Runs the real task file, the real ``matpo`` system and the
real lexical judge on 30 shared Bamboogle questions."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import list_eval_logs, read_eval_log

import tests.leaderboards.role_key  # noqa: F401  (registers the rolekey/ provider)
from mara_bench.harness.cli import main as mara
from mara_bench.harness.datasets.loader import load_benchmark
from mara_bench.leaderboards.suite import SuiteError, parse_suite
from tests.leaderboards.role_key import KEY_VARIABLE
from tests.leaderboards.test_lb_site import CHROMIUM, CHROMIUM_ARGS

N = 30
ROLES = {
    "planner": {"base": "rolekey/planner-base", "trained": "rolekey/planner-trained"},
    "worker": {"base": "rolekey/worker-base", "trained": "rolekey/worker-trained"},
}


def _suite(path: Path) -> Path:
    raw = {
        "name": "roles",
        "checkpoints": [
            {"name": "base", "model": "rolekey/planner-base", "roles": {"worker": ROLES["worker"]["base"]}}
        ],
        "tasks": [
            {
                "name": "bamboogle",
                "task": "tasks/qa.py@bamboogle",
                "args": {"limit": N, "tools": "browse", "max_turns": 2, "worker_max_turns": 1},
                "systems": ["matpo"],
                "protocols": ["quick"],
            }
        ],
        "role_matrix": {"task": "bamboogle", "system": "matpo", "protocol": "quick", "roles": ROLES},
    }
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture
def site(tmp_path, data_dir, monkeypatch):
    key = {
        str(s.input): {"gold": s.target[0], "i": i}
        for i, s in enumerate(load_benchmark("bamboogle", limit=N).dataset)
    }
    (tmp_path / "key.json").write_text(json.dumps(key))
    monkeypatch.setenv(KEY_VARIABLE, str(tmp_path / "key.json"))
    out = tmp_path / "out"
    argv = ["nightly", str(_suite(tmp_path / "suite.yaml")), "--out", str(out), "--display", "none"]
    assert mara(argv + ["--night", "2026-01-01"]) == 0
    return out / "site" / "index.html"


def test_the_role_matrix_shows_which_role_made_the_difference(site, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(site.as_uri())
        rows = page.locator("table.role-matrix tbody tr")
        table = {
            tuple(rows.nth(i).locator("td.variant").all_inner_texts()): (
                rows.nth(i).locator("td.value").inner_text(),
                rows.nth(i).locator("td.delta").inner_text(),
            )
            for i in range(rows.count())
        }
        # base planner right on questions 0, 3, 6, ... (10 of 30); trained planner on all but 2, 5, 8, ... (20)
        assert table == {
            ("base", "base"): ("0.333", "baseline"),
            ("base", "trained"): ("0.333", "+0.000"),
            ("trained", "base"): ("0.667", "+0.333"),
            ("trained", "trained"): ("0.667", "+0.333"),
        }
        effects = {e.get_attribute("data-role"): e.inner_text() for e in page.locator("li.effect").all()}
        assert "+33.3 pts" in effects["planner"] and "a difference" in effects["planner"]
        assert "+0.0 pts" in effects["worker"] and "no clear difference" in effects["worker"]
        worker_tokens = rows.nth(0).locator("td.cost").nth(1).inner_text()
        assert float(worker_tokens) > 0  # the worker ran (and cost) in every combination
        shot = tmp_path / "role-matrix.png"
        page.locator("#role-matrix").screenshot(path=str(shot))
        browser.close()
    artifacts = Path(os.environ.get("MARA_TEST_ARTIFACTS", tempfile.gettempdir()))
    artifacts.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, artifacts / "mara-role-matrix-screenshot.png")


def test_each_combinations_log_records_the_model_of_each_role(site):
    served = set()
    for info in list_eval_logs(str(site.parents[1] / "logs"), recursive=True):
        metadata = read_eval_log(info.name, header_only=True).eval.metadata
        if "role_matrix" in metadata:
            served.add(tuple(sorted(metadata["role_models"].items())))
    assert served == {
        (("planner", f"rolekey/planner-{p}"), ("worker", f"rolekey/worker-{w}"))
        for p in ("base", "trained")
        for w in ("base", "trained")
    }


def test_a_role_the_system_does_not_have_is_one_line():
    raw = {
        "name": "roles",
        "checkpoints": [{"name": "base", "model": "mockllm/model"}],
        "tasks": [{"name": "bamboogle", "task": "tasks/qa.py@bamboogle"}],
        "role_matrix": {"task": "bamboogle", "system": "matpo", "roles": {"planer": {"a": "m", "b": "n"}}},
    }
    with pytest.raises(
        SuiteError,
        match=r"role_matrix.roles.planer: system 'matpo' has no role 'planer'; did you mean 'planner'",
    ):
        parse_suite(raw)
