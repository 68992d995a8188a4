"""Two nights of a web benchmark through the real ``inspect eval`` CLI (the real ``bamboogle`` task, MARS with
Serper-style search and page reads, the real lexical judge) against a fake search/page server on 127.0.0.1, with a
scripted model that answers from the pages it reads. Night 1 records into a snapshot, which is then frozen; the
server changes its pages; night 2 replaying the pinned snapshot makes no request at all (counted at the server and
in the log) and scores exactly what night 1 scored, while night 2 with the cache off scores differently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from sqlalchemy import update
from sqlalchemy.orm import Session

from mara_bench.leaderboards.compare import NOT_COMPARABLE, compare_pair
from mara_bench.leaderboards.site import render_site
from mara_bench.leaderboards.store import HistoryStore, Run

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = {"q1": ("Which river is longest in Zorvan?", "alpha"), "q2": ("Who founded Belcor?", "beta")}
QUESTIONS["q3"] = ("When did Caldris join?", "gamma")

TASK_FILE = '''
"""The real bamboogle task, answered by a model that reads "ANSWER: <word>" off the pages MARS shows it."""
import re

from inspect_ai import task, task_with
from inspect_ai.model import GenerateConfig, ModelAPI, get_model, modelapi

from mara_bench.harness.testing import scripted_output
from tasks.qa import bamboogle

FOUND = re.compile(r"ANSWER: (\\w+)")


class PageReader(ModelAPI):
    def __init__(self, model_name, base_url=None, api_key=None, config=GenerateConfig(), **model_args):
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(self, input, tools, tool_choice, config):
        system, last = input[0].text, input[-1].text
        found = FOUND.findall(last)
        if system.startswith("You are an expert information extractor"):  # System 1 distils the pages
            text = f"Notes: ANSWER: {found[0]}" if found else "Notes: nothing relevant"
        elif "<tool_response>" in last:  # System 2 answers from the notes
            text = f"<think>read</think><answer>{found[0] if found else 'unknown'}</answer>"
        else:  # System 2 searches for the question
            call = {"name": "search", "arguments": {"query": last.split("Question: ")[-1]}, "purpose": "facts"}
            text = "<think>search</think><tool_call>" + __import__("json").dumps(call) + "</tool_call>"
        return scripted_output(text, model=self.model_name)


@modelapi(name="pagereader")
def pagereader():
    return PageReader


@task
def bamboogle_pages(**options):
    return task_with(bamboogle(**options), model=get_model("pagereader/x"))
'''


def serve_night(web, answers: dict[str, str]) -> None:
    """Search answers one result per question, linking to that question's page, which states ``answers[id]``."""
    by_question = {question: key for key, (question, _) in QUESTIONS.items()}

    def search(seen):
        key = by_question[json.loads(seen.body)["q"]]
        organic = [{"title": f"About {key}", "link": f"{web.url}/page/{key}", "snippet": "see the page"}]
        return web.reply(body={"organic": organic})

    web.route_by("/search", search)
    for key, answer in answers.items():
        web.route(
            f"/page/{key}", web.reply(body=f"Reference page. ANSWER: {answer}", content_type="text/plain")
        )


def inspect_eval(
    tmp_path: Path, name: str, web, cache: dict[str, str], env: dict[str, str]
) -> tuple[dict, dict]:
    """Run the eval with the CLI; the accounting and lexical metrics and the task metadata of its log."""
    options = {
        "data": "questions.jsonl",
        "system": "mars",
        "tools": "search",
        "search_backend": "serper",
        "serper_url": f"{web.url}/search",
        "browse_allow_private": "true",
        "tool_store": "store",
        **cache,
    }
    command = [str(Path(sys.executable).with_name("inspect")), "eval", "night.py@bamboogle_pages"]
    command += [item for key, value in options.items() for item in ("-T", f"{key}={value}")]
    command += ["--log-dir", f"logs-{name}", "--display", "plain"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (info,) = list_eval_logs(str(tmp_path / f"logs-{name}"))
    log = read_eval_log(info.name)
    assert log.status == "success"
    metrics = {name: m.value for score in log.results.scores for name, m in score.metrics.items()}
    return metrics, log.eval.metadata


@pytest.mark.slow
def test_a_pinned_snapshot_replays_night_one_exactly_with_no_network_after_the_web_changed(tmp_path, web):
    rows = [{"id": key, "question": q, "golden_answers": [gold]} for key, (q, gold) in QUESTIONS.items()]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "night.py").write_text(TASK_FILE)
    base_env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    base_env.pop("SERPER_API_KEY", None)
    keyed = {**base_env, "SERPER_API_KEY": "test-key"}

    serve_night(web, {"q1": "alpha", "q2": "beta", "q3": "wrong"})
    night1, meta1 = inspect_eval(
        tmp_path, "1", web, {"tool_cache": "record", "tool_snapshot": "night1"}, keyed
    )
    assert night1["em"] == pytest.approx(2 / 3)
    assert night1["total_tool_cache_record"] == night1["total_tool_cache_live"] == 6  # 3 searches + 3 pages
    assert meta1["tool_cache"]["snapshot"] == "night1" and not meta1["tool_cache"]["frozen"]
    recorded_requests = len(web.requests)
    assert recorded_requests == 6

    mara = [sys.executable, "-m", "mara_bench.harness.cli", "tools"]
    frozen = subprocess.run(
        [*mara, "freeze", "night1", "--store", "store"],
        cwd=tmp_path,
        env=base_env,
        capture_output=True,
        text=True,
    )
    assert frozen.returncode == 0, frozen.stderr
    snapshot_id = frozen.stdout.split()[-1]
    assert snapshot_id.startswith("sha256:")

    serve_night(web, {"q1": "changed", "q2": "changed", "q3": "gamma"})  # the web moved overnight
    replayed, meta2 = inspect_eval(
        tmp_path, "2", web, {"tool_cache": "replay", "tool_snapshot": "night1"}, base_env
    )
    assert len(web.requests) == recorded_requests  # not one request, and no API key was set
    assert replayed["total_tool_cache_live"] == 0 and replayed["total_tool_cache_miss"] == 0
    assert replayed["total_tool_cache_hit"] == 6
    assert {k: replayed[k] for k in ("em", "acc", "f1")} == {k: night1[k] for k in ("em", "acc", "f1")}
    assert meta2["tool_cache"] == {**meta2["tool_cache"], "snapshot": "night1", "snapshot_id": snapshot_id}

    live, meta3 = inspect_eval(tmp_path, "3", web, {"tool_cache": "off"}, keyed)
    assert live["em"] == pytest.approx(1 / 3) and live["em"] != night1["em"]
    assert meta3["tool_cache"] is None and len(web.requests) == recorded_requests + 6

    the_leaderboard_tells_the_snapshots_apart(tmp_path, snapshot_id)


def the_leaderboard_tells_the_snapshots_apart(tmp_path: Path, snapshot_id: str) -> None:
    """Ingested, the three nights carry their tool responses; the replayed night compared with the live one is
    "not comparable", never a regression, and the site says the rows saw different pages."""
    history = HistoryStore(str(tmp_path / "history.sqlite"))
    for night in ("1", "2", "3"):
        history.ingest(str(tmp_path / f"logs-{night}"))
    runs = history.runs()
    short = snapshot_id.removeprefix("sha256:")[:12]
    assert [run.tool_snapshot for run in runs] == ["night1 (open, record)", f"night1@{short}", None]
    comparison = compare_pair(history, runs[2], runs[1], "previous night")
    assert comparison.status == NOT_COMPARABLE and comparison.test is None
    assert f"tool responses differ (night1@{short} → live web)" in comparison.reason
    with Session(history.engine) as session, session.begin():  # the replayed night as a row of its own
        session.execute(update(Run).where(Run.id == runs[1].id).values(checkpoint="replayed"))
    page = render_site(history, tmp_path / "site", runs[2].night, []).read_text()
    assert "saw different tool responses (live web, night1@" in page


def test_an_unknown_snapshot_stops_inspect_eval_with_one_line_before_any_sample(tmp_path, web):
    (tmp_path / "questions.jsonl").write_text(
        json.dumps({"id": "q", "question": "x", "golden_answers": ["y"]})
    )
    (tmp_path / "night.py").write_text(TASK_FILE)
    (tmp_path / "store").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from mara_bench.harness.toolcache import open_store; open_store('store', create=True)",
        ],
        cwd=tmp_path,
        env=env,
        check=True,
    )
    command = [str(Path(sys.executable).with_name("inspect")), "eval", "night.py@bamboogle_pages"]
    for option in (
        "data=questions.jsonl",
        "system=mars",
        "tool_cache=replay",
        "tool_snapshot=night9",
        "tool_store=store",
    ):
        command += ["-T", option]
    done = subprocess.run(
        command + ["--log-dir", "logs"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "no snapshot 'night9' (snapshots: none yet)" in output
    assert "Traceback" not in output and not web.requests
