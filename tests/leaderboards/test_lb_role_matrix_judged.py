"""A role matrix on an LLM-judged task runs through ``mara nightly``: every combination binds the suite checkpoint's
``grader`` role (a scripted grader, ``verdictkey``) as that checkpoint's own runs do, and the site renders the
matrix table with one row per combination."""

from __future__ import annotations

import json

import yaml
from inspect_ai.log import list_eval_logs, read_eval_log

import tests.leaderboards.role_key  # noqa: F401  (registers the rolekey/ provider)
import tests.leaderboards.verdict_key  # noqa: F401  (registers the verdictkey/ grader)
from mara_bench.harness.cli import main as mara
from mara_bench.harness.datasets.loader import load_benchmark
from tests.leaderboards.role_key import KEY_VARIABLE
from tests.leaderboards.test_lb_role_matrix import ROLES
from tests.leaderboards.test_lb_role_matrix import N as KEYED

GRADER = "verdictkey/accept=e"
N = 4


def test_a_role_matrix_on_an_llm_judged_task_binds_the_grader_and_renders(tmp_path, data_dir, monkeypatch):
    # the key of every question the other role-matrix test asks: Inspect keeps the scripted models between tests
    samples = load_benchmark("bamboogle", limit=KEYED).dataset
    key = {str(s.input): {"gold": s.target[0], "i": i} for i, s in enumerate(samples)}
    (tmp_path / "key.json").write_text(json.dumps(key))
    monkeypatch.setenv(KEY_VARIABLE, str(tmp_path / "key.json"))
    raw = {
        "name": "judged-roles",
        "checkpoints": [{"name": "base", "model": ROLES["planner"]["base"], "roles": {"grader": GRADER}}],
        "tasks": [
            {
                "name": "bamboogle",
                "task": "tasks/qa.py@bamboogle",
                "args": {
                    "limit": N,
                    "tools": "browse",
                    "max_turns": 2,
                    "worker_max_turns": 1,
                    "judge": "equivalence",
                },
                "systems": ["matpo"],
                "protocols": ["quick"],
            }
        ],
        "role_matrix": {"task": "bamboogle", "system": "matpo", "protocol": "quick", "roles": ROLES},
    }
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump(raw, sort_keys=False))
    out = tmp_path / "out"
    assert mara(["nightly", str(suite), "--out", str(out), "--display", "none", "--night", "2026-01-01"]) == 0
    graders = set()
    for info in list_eval_logs(str(out / "logs"), recursive=True):
        log = read_eval_log(info.name, header_only=True)
        if "role_matrix" in log.eval.metadata:
            graders.add(log.eval.model_roles["grader"].model)
    assert graders == {GRADER}
    page = (out / "site" / "index.html").read_text()
    table = page.split('class="role-matrix', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr") == 1 + 4  # the header and the four combinations
