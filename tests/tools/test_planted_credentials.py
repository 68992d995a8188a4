"""No credential is ever written down: an eval (``inspect eval``, MARS over Serper-style search recording into a tool
store), a nightly (``mara nightly``) and a training run (``mara train`` with an OpenAI-compatible grader) are run
with credentials planted in every form -- a header key (``SERPER_API_KEY``, a grader ``api_key``), URL
``user:password`` and a query ``?key=`` -- wherever the harness takes them, and every artefact (logs, unzipped;
stores; run folders; site; history database; everything printed) is searched for them: none is found. Where Inspect
would record a setting verbatim (``-T``, ``-M``, suite model arguments) a credential is refused in one line that
does not repeat it, before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.leaderboards.conftest import suite_dict
from tests.tools.test_tool_cache_eval import QUESTIONS, TASK_FILE, serve_night
from tests.trainer._fake_grader import FakeGrader

ROOT = Path(__file__).resolve().parents[2]
HEADER_KEY = "PLANTED-HEADER-KEY-5e1f"
PASSWORD = "PLANTED-PASSWORD-77ab"
QUERY_KEY = "PLANTED-QUERY-KEY-c03d"
PLANTED = (HEADER_KEY, PASSWORD, QUERY_KEY)


def artefact_texts(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (each member of a zip file, such as an ``.eval`` log, on its own), by path."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                found |= {f"{path}:{name}": archive.read(name) for name in archive.namelist()}
        else:
            found[str(path)] = path.read_bytes()
    return found


def assert_nothing_planted(folder: Path, *printed: str) -> None:
    texts = artefact_texts(folder) | {f"output {index}": text.encode() for index, text in enumerate(printed)}
    assert len(texts) > 1
    leaks = [
        (where, secret) for where, data in texts.items() for secret in PLANTED if secret.encode() in data
    ]
    assert leaks == []


def planted_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env["SERPER_API_KEY"] = HEADER_KEY
    env["MARA_TOOL_STORE"] = f"memory://planted-user:{PASSWORD}@night/store?key={QUERY_KEY}"
    return env


def inspect_eval(tmp_path: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).with_name("inspect")), "eval", "night.py@bamboogle_pages"]
    for option in ("data=questions.jsonl", "system=mars", "tools=search", "search_backend=serper", *options):
        command += ["-T", option]
    command += ["--log-dir", "logs", "--display", "plain"]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_an_eval_recording_tool_responses_writes_no_planted_credential(tmp_path, web):
    rows = [{"id": key, "question": q, "golden_answers": [gold]} for key, (q, gold) in QUESTIONS.items()]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "night.py").write_text(TASK_FILE)
    serve_night(web, {"q1": "alpha", "q2": "beta", "q3": "gamma"})
    env = planted_env()
    endpoint = f"serper_url={web.url}/search"

    for refused in (f"{endpoint}?key={QUERY_KEY}", f"tool_store=http://user:{PASSWORD}@127.0.0.1:9/"):
        done = inspect_eval(tmp_path, env, refused, "tool_cache=record")
        said = " ".join((done.stdout + done.stderr).split())  # Inspect wraps its error line
        assert done.returncode != 0 and "carries a credential" in said and "Traceback" not in said
        assert not (tmp_path / "logs").exists() and not web.requests

    done = inspect_eval(tmp_path, env, endpoint, "browse_allow_private=true", "tool_cache=record")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (
        web.hits("/search")[0].headers["X-API-KEY"] == HEADER_KEY
    )  # the key was used, and went nowhere else
    (log,) = (tmp_path / "logs").glob("*.eval")
    header = json.loads(zipfile.ZipFile(log).read("header.json"))
    assert header["eval"]["metadata"]["tool_cache"]["store"] == "memory://***@night/store?key=***"
    assert_nothing_planted(tmp_path, done.stdout, done.stderr)


@pytest.mark.slow
def test_a_nightly_writes_no_planted_credential_and_refuses_one_in_model_args(tmp_path, monkeypatch, capsys):
    from mara_bench.leaderboards.cli import main

    for name, value in planted_env().items():
        monkeypatch.setenv(name, value)
    raw = suite_dict()
    raw["checkpoints"] = raw["checkpoints"][:1]
    raw["tasks"][0]["systems"], raw["tasks"][0]["args"] = ["direct"], {"n": 8}
    raw["comparisons"], raw["cross_solver"] = [], None
    suite = tmp_path / "suite.yaml"
    argv = [str(suite), "--out", str(tmp_path / "out"), "--display", "none", "--night", "2026-01-01"]

    forged = {
        **raw,
        "checkpoints": [{**raw["checkpoints"][0], "model_args": {"base_url": f"http://u:{PASSWORD}@h"}}],
    }
    suite.write_text(yaml.safe_dump(forged))
    assert main(argv) == 2
    refused = capsys.readouterr()
    assert "carries a credential" in refused.err and refused.err.count("\n") == 1
    assert not (tmp_path / "out").exists()

    suite.write_text(yaml.safe_dump(raw))
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert (tmp_path / "out" / "site" / "index.html").is_file()
    assert_nothing_planted(tmp_path, refused.out, refused.err, printed.out, printed.err)


@pytest.mark.slow
def test_a_training_run_with_a_keyed_grader_writes_no_planted_credential(tmp_path):
    rows = [
        {"id": f"q{i}", "question": f"Who founded company {i}?", "golden_answers": [f"F {i}"]}
        for i in range(2)
    ]
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with FakeGrader() as server:
        keyed_url = server.base_url.replace("://", f"://grader:{PASSWORD}@")
        grader = {"model": "openai-api/fake/grader", "base_url": keyed_url, "api_key": HEADER_KEY}
        recipe = {
            "task": {
                "benchmark": "musique",
                "data": "train.jsonl",
                "split": "train",
                "judge": "simpleqa",
                "system": "direct",
                "grader": grader,
            },
            "rollout": {"prompts_per_step": 2, "group_size": 2, "max_tokens": 4},
            "steps": 1,
            "save_every": 0,
        }
        (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
        command = [sys.executable, "-m", "mara_bench.harness.cli", "train", "recipe.yaml", "--out", "run"]
        done = subprocess.run(
            command, cwd=tmp_path, env=planted_env(), capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert server.requests >= 4  # the grader, reached with its credentials, judged every episode
    assert json.loads((tmp_path / "run" / "config.json").read_text())["task"]["grader"]["api_key"] == "***"
    (tmp_path / "recipe.yaml").unlink()  # the user's own file, which holds them
    assert_nothing_planted(tmp_path, done.stdout, done.stderr)
