"""Leaderboard columns from issue 13: per-question accounting (tokens, tool calls, pages, python, dollars) and the
headline metric per group (HLE category), read from a real eval's log, ingested and rendered."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from inspect_ai import eval

from mara_bench.harness.testing import scripted_model
from mara_bench.leaderboards.columns import run_columns
from mara_bench.leaderboards.site import render_site
from mara_bench.leaderboards.store import HistoryStore

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"


def _grade(messages, config):
    verdict = "yes" if "right answer" in messages[-1].text else "no"
    return json.dumps({"extracted_final_answer": "x", "reasoning": "r", "correct": verdict, "confidence": 80})


def test_accounting_and_breakdown_columns_reach_the_site(tmp_path):
    solver = scripted_model(lambda messages, config: "the right answer")  # 16 characters: 4 output tokens
    eval(
        str(TASKS_DIR / "hle.py@hle"),
        task_args={"data": "samples", "system": "direct"},
        model=solver,
        # a grader name of this run alone, so no verdict comes from the judges' reply cache (a cached one costs 0)
        model_roles={"grader": scripted_model(_grade, name=f"mockllm/grader-{uuid.uuid4().hex}")},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    store.ingest(str(tmp_path / "logs"))
    (run,) = store.runs()  # the unpriced cost (NaN) must not stop the run from being stored
    columns = run_columns(store, run)
    assert (
        columns.accounting
        == (
            1.0,
            4.0,
            0.0,
            0.0,
            0.0,
            0.0,
            None,
            1.0,
            21.0,
            None,
        )
    )  # tokens in/out, tools, pages, papers, python, $; the grader's tokens in/out (its 85-character verdict), $
    groups = {b.group: (b.value, b.n, b.unscored) for b in columns.breakdowns}
    assert groups == {
        "category=Biology/Medicine": (1.0, 1, 0),
        "category=Math": (1.0, 2, 0),
        "category=Other": (1.0, 1, 0),
        "category=Physics": (1.0, 1, 0),
    }
    index = render_site(store, tmp_path / "site", "2026-01-01", []).read_text()
    store.close()
    assert (
        '<th class="cost">tokens in</th><th class="cost">tokens out</th><th class="cost">tool calls</th>'
        '<th class="cost">pages</th><th class="cost">papers</th><th class="cost">python</th>'
        '<th class="cost">$ / question</th><th class="cost">judge tokens in</th>'
        '<th class="cost">judge tokens out</th><th class="cost">judge $ / question</th>' in index
    )
    assert re.search(r'<td class="cost">1\.0</td><td class="cost">4\.0</td>', index)
    assert '<td>category=Math</td><td class="value">1.000</td><td>2</td><td>0</td>' in index
