"""``mara nightly`` catches a regression scored by our own judges (dict-valued scores), end to end.

The suite runs the real task files, the ``direct`` system and the real ``math`` and ``lexical`` judges on 30 samples
of the shared AIME 2025 and Bamboogle data; the evaluated model is the scripted ``answerkey`` provider, so night 1
answers every question right and nights 2 and 3 answer every one wrong. Night 2 must exit 1 naming both regressions,
night 3 (identical to night 2) must exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

import tests.leaderboards.answer_key  # noqa: F401  (registers the answerkey/ provider)
from mara_bench.harness.cli import main as mara
from mara_bench.harness.datasets.loader import load_benchmark
from mara_bench.leaderboards.store import HistoryStore

N = 30
TASKS = {  # suite task name -> (task file, benchmark, right reply, wrong reply)
    "aime2025": (
        "tasks/aime.py@aime2025",
        "aime2025",
        "So the answer is \\boxed{{{gold}}}.",
        "\\boxed{{-1}}",
    ),
    "bamboogle": ("tasks/qa.py@bamboogle", "bamboogle", "{gold}", "no idea at all"),
}


def _answer_key(path: Path, right: bool) -> Path:
    replies = {}
    for _, benchmark, right_reply, wrong_reply in TASKS.values():
        for sample in load_benchmark(benchmark, limit=N).dataset:
            gold = sample.target if isinstance(sample.target, str) else sample.target[0]
            replies[str(sample.input)] = (right_reply if right else wrong_reply).format(gold=gold)
    path.write_text(json.dumps(replies))
    return path


def _suite(path: Path, key: Path) -> Path:
    raw = {
        "name": "judged",
        "checkpoints": [{"name": "ours", "model": "answerkey/ours", "model_args": {"key": str(key)}}],
        "tasks": [
            {"name": name, "task": task, "args": {"limit": N}, "systems": ["direct"], "protocols": ["quick"]}
            for name, (task, *_rest) in TASKS.items()
        ],
    }
    path.write_text(yaml.safe_dump(raw))
    return path


def test_nightly_flags_an_all_wrong_night_on_math_and_lexical_judges(tmp_path, data_dir, capsys):
    out = tmp_path / "out"
    argv = ["nightly", str(tmp_path / "suite.yaml"), "--out", str(out), "--display", "none"]

    _suite(tmp_path / "suite.yaml", _answer_key(tmp_path / "right.json", right=True))
    assert mara(argv + ["--night", "2026-01-01"]) == 0

    _suite(tmp_path / "suite.yaml", _answer_key(tmp_path / "wrong.json", right=False))
    assert mara(argv + ["--night", "2026-01-02"]) == 1
    printed = capsys.readouterr().out
    assert "2 comparison(s), 2 regression(s)" in printed
    assert "REGRESSION ours aime2025 direct quick previous night: -100.0 pts" in printed
    assert "REGRESSION ours bamboogle direct quick previous night: -100.0 pts" in printed

    store = HistoryStore(str(out / "history.sqlite"))
    runs = {(r.task, r.night): r for r in store.runs()}
    assert {(task, r.headline_score, r.headline_metric) for (task, _), r in runs.items()} == {
        ("aime2025", "math", "accuracy"),
        ("bamboogle", "lexical", "em"),
    }
    assert runs[("aime2025", "2026-01-01")].headline_value == 1.0
    assert runs[("aime2025", "2026-01-02")].headline_value == 0.0
    assert len(store.sample_scores(runs[("bamboogle", "2026-01-02")].id, "lexical")) == N
    store.close()

    assert mara(argv + ["--night", "2026-01-03"]) == 0
    assert "2 comparison(s), 0 regression(s)" in capsys.readouterr().out
    summary = (out / "site" / "summary.md").read_text()
    assert "No regressions (2 comparisons)." in summary and "Not comparable" not in summary
