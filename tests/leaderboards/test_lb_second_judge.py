"""A second grader through ``mara nightly``: the scripted graders (``verdictkey``) disagree or agree on purpose, so a
drop under the first grader is *judge-sensitive* or *confirmed*, the exit code follows ``settings.fail_on``, and the
site shows the two graders' agreement. Runs the real task file, the ``direct`` system and the real ``equivalence``
judge on 30 samples of the shared Bamboogle data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

import tests.leaderboards.answer_key  # noqa: F401  (registers the answerkey/ provider)
import tests.leaderboards.verdict_key  # noqa: F401  (registers the verdictkey/ provider)
from mara_bench.catalog import get_benchmark
from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.cli import main as mara
from mara_bench.harness.datasets.loader import load_benchmark
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.leaderboards.store import HistoryStore

N = 30


def _answers(path: Path, reply: str) -> Path:
    path.write_text(json.dumps({str(s.input): reply for s in load_benchmark("bamboogle", limit=N).dataset}))
    return path


def _suite(path: Path, key: Path, second_grader: str, fail_on: str) -> None:
    raw = {
        "name": "two-judges",
        "settings": {"fail_on": fail_on},
        "checkpoints": [
            {
                "name": "ours",
                "model": "answerkey/ours",
                "model_args": {"key": str(key)},
                "roles": {"grader": "verdictkey/accept=ANSWER-A"},
            }
        ],
        "tasks": [
            {
                "name": "bamboogle",
                "task": "tasks/qa.py@bamboogle",
                "args": {"limit": N, "judge": "equivalence", "second_grader": second_grader},
                "systems": ["direct"],
                "protocols": ["quick"],
            }
        ],
    }
    path.write_text(yaml.safe_dump(raw))


def _two_nights(tmp_path: Path, second_grader: str, fail_on: str, capsys) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    argv = ["nightly", str(tmp_path / "suite.yaml"), "--out", str(out), "--display", "none"]
    _suite(tmp_path / "suite.yaml", _answers(tmp_path / "a.json", "ANSWER-A"), second_grader, fail_on)
    assert mara(argv + ["--night", "2026-01-01"]) == 0
    _suite(tmp_path / "suite.yaml", _answers(tmp_path / "b.json", "ANSWER-B"), second_grader, fail_on)
    code = mara(argv + ["--night", "2026-01-02"])
    return code, capsys.readouterr().out, out


@pytest.mark.parametrize("fail_on, exit_code", [("any", 1), ("confirmed", 0)])
def test_a_drop_the_second_grader_does_not_see_is_judge_sensitive(
    tmp_path, data_dir, capsys, fail_on, exit_code
):
    code, printed, out = _two_nights(tmp_path, "verdictkey/accept=ANSWER-A+ANSWER-B", fail_on, capsys)
    assert code == exit_code
    assert "REGRESSION ours bamboogle direct quick previous night: -100.0 pts" in printed
    assert printed.rstrip().count("judge-sensitive") == 1

    store = HistoryStore(str(out / "history.sqlite"))
    night2 = next(r for r in store.runs() if r.night == "2026-01-02")
    assert {v for v, _ in store.sample_scores(night2.id, "equivalence").values()} == {0.0}
    assert {v for v, _ in store.sample_scores(night2.id, "equivalence_grader2").values()} == {1.0}
    store.close()

    page = (out / "site" / "index.html").read_text()
    assert re.search(r'<tr class="status-regression check-judge-sensitive">', page)
    agreement_rows = re.findall(
        r"<td>(\d+)</td><td>([\d.]+)</td><td>([\d.]+)</td>\s*<td class=\"agreement-value\">([\d.]+)</td>",
        page,
    )
    assert ("30", "0.000", "1.000", "0.000") in agreement_rows  # night 2: every verdict flipped 0 -> 1
    assert "| judge-sensitive |" in (out / "site" / "summary.md").read_text()


def test_a_drop_both_graders_see_is_confirmed_and_fails_a_confirmed_only_suite(tmp_path, data_dir, capsys):
    code, printed, out = _two_nights(tmp_path, "verdictkey/accept=ANSWER-A", "confirmed", capsys)
    assert code == 1
    assert re.search(r"REGRESSION ours bamboogle .* -100\.0 pts .*; confirmed", printed)
    assert 'class="status-regression check-confirmed"' in (out / "site" / "index.html").read_text()


def test_a_judge_audit_shows_each_graders_accuracy_against_people(tmp_path, data_dir, capsys):
    samples = load_benchmark("bamboogle", limit=6).dataset
    # people: the three ANSWER-A answers are right, the three ANSWER-B ones wrong
    rows = [
        {"id": s.id, "answer": f"ANSWER-{'A' if i % 2 else 'B'}", "correct": bool(i % 2)}
        for i, s in enumerate(samples)
    ]
    (tmp_path / "audit.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    raw = {
        "name": "audit",
        "checkpoints": [
            {"name": "audit", "model": "mockllm/model", "roles": {"grader": "verdictkey/accept=ANSWER-A"}}
        ],
        "tasks": [
            {
                "name": "bamboogle-audit",
                "task": "tasks/qa.py@bamboogle",
                "args": {
                    "audit": str(tmp_path / "audit.jsonl"),
                    "judge": "equivalence",
                    "second_grader": "verdictkey/accept=ANSWER-A+ANSWER-B",
                },
            }
        ],
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    assert mara(["nightly", str(tmp_path / "suite.yaml"), "--out", str(out), "--display", "none"]) == 0
    page = (out / "site" / "index.html").read_text()
    row = re.search(
        r'<td class="grader-accuracy">([\d.]+)</td>.*?<td class="second-grader-accuracy">([\d.]+)</td>',
        page,
        re.S,
    )
    # the grader agrees with people on all 6; the second grader says "right" to every answer: 3 of 6
    assert row is not None and row.groups() == ("1.000", "0.500")


def test_a_malformed_audit_file_is_one_line(tmp_path):
    (tmp_path / "audit.jsonl").write_text('{"id": "1", "answer": "x"}\n')
    with pytest.raises(
        ConfigError,
        match=r"audit: .*audit.jsonl:1: missing key\(s\) correct; each row needs id, answer and correct",
    ):
        evaluation_task(get_benchmark("bamboogle"), data="samples", audit=str(tmp_path / "audit.jsonl"))
