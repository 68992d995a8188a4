"""The history store: idempotent ingestion, two concurrent ingesters on one SQLite file, and real PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import fields

import pytest

from mara_bench.leaderboards import store as store_module
from mara_bench.leaderboards.collect import SkippedLogWarning, file_hash
from mara_bench.leaderboards.records import MetricValue, RunRecord, SampleScore
from mara_bench.leaderboards.store import HistoryStore, Metric, Run, SampleRow

# 4 logs; each stores 2 scores (final, solver) x 40 samples
SAMPLE_ROWS = 4 * 2 * 40


def _counts(store: HistoryStore) -> tuple[int, int, int]:
    return store.count(Run), store.count(Metric), store.count(SampleRow)


def _check_ingest_twice(url: str, logs: str) -> HistoryStore:
    store = HistoryStore(url)
    first = store.ingest(logs)
    assert len(first.added) == 4 and not first.skipped
    counts = _counts(store)
    # each run: 2 scores x (accuracy, stderr) metrics
    assert counts == (4, 4 * 2 * 2, SAMPLE_ROWS)
    second = store.ingest(logs)
    assert second.added == [] and len(second.already_present) == 4
    assert _counts(store) == counts
    flaky = store.runs(checkpoint="flaky", system="direct")[0]
    assert flaky.headline_value == pytest.approx(0.8) and flaky.n_samples == 40
    scores = store.sample_scores(flaky.id, "final")
    assert scores["q5"][0] == 0.0 and scores["q6"] == (1.0, "12")
    return store


def test_ingesting_a_folder_twice_adds_nothing(eval_logs, tmp_path):
    store = _check_ingest_twice(str(tmp_path / "history.sqlite"), str(eval_logs))
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()


def test_a_copied_log_is_the_same_run(logs_copy, tmp_path):
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    store.ingest(str(logs_copy))
    original = sorted(logs_copy.glob("*.eval"))[0]
    shutil.copyfile(original, logs_copy / "sub-copy.eval")
    report = store.ingest(str(logs_copy))
    assert report.added == [] and len(report.already_present) == 5
    assert store.count(Run) == 4


def test_a_log_seen_before_unchanged_is_not_read_again(logs_copy, tmp_path, monkeypatch):
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    first = store.ingest(str(logs_copy))
    hashed: list[str] = []
    monkeypatch.setattr(store_module, "file_hash", lambda path: hashed.append(path) or file_hash(path))
    again = store.ingest(str(logs_copy))
    assert hashed == [] and again.hashes == first.hashes and len(again.already_present) == 4
    touched = sorted(logs_copy.glob("*.eval"))[0]
    os.utime(touched, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    store.ingest(str(logs_copy))
    assert [path.rsplit("/", 1)[-1] for path in hashed] == [touched.name]  # its modification time moved
    store.close()


def test_unusable_logs_are_skipped_and_named(logs_copy, tmp_path):
    bad = logs_copy / "2026-01-01T00-00-00-00-00_arith_broken.eval"
    bad.write_bytes(b"\x00" * 100)
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    with pytest.warns(SkippedLogWarning, match="arith_broken.eval"):
        report = store.ingest(str(logs_copy))
    assert report.skipped == [next(p for p in report.skipped if p.endswith("arith_broken.eval"))]
    assert len(report.added) == 4


INGEST = """
import sys, time, warnings
from pathlib import Path
from mara_bench.leaderboards.store import HistoryStore
warnings.simplefilter("error")
url, logs, ready, go = sys.argv[1:]
store = HistoryStore(url)
Path(ready).touch()
while not Path(go).exists():  # start ingesting together with the other process
    time.sleep(0.01)
report = store.ingest(logs)
print(len(report.added), len(report.already_present), len(report.skipped))
"""


def test_two_concurrent_ingesters_store_each_log_once(logs_copy, tmp_path):
    # more logs for a longer overlap: a second copy of the four under another name is the same four runs
    for path in list(logs_copy.glob("*.eval")):
        shutil.copyfile(path, logs_copy / f"again-{path.name}")
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", INGEST, url, str(logs_copy), str(flag), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for flag in ready
    ]
    deadline = time.monotonic() + 120
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()
    results = [p.communicate(timeout=180) for p in processes]
    for process, (_out, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, err
    added = [int(out.split()[0]) for out, _ in results]
    present = [int(out.split()[1]) for out, _ in results]
    assert sum(added) == 4
    assert [a + p for a, p in zip(added, present, strict=True)] == [8, 8]
    store = HistoryStore(url)
    assert _counts(store) == (4, 16, SAMPLE_ROWS)


def test_postgresql_store(eval_logs, postgres_url):
    store = _check_ingest_twice(postgres_url, str(eval_logs))
    store.close()


def test_bad_database_url_is_a_clear_error():
    with warnings.catch_warnings(), pytest.raises(Exception, match="nosuchdialect"):
        HistoryStore("nosuchdialect://x/y")


@pytest.mark.parametrize(
    ("table", "record", "own"),
    [
        (Run, RunRecord, {"id", "headline_value", "headline_ci_low", "headline_ci_high", "ingested_at"}),
        (Metric, MetricValue, {"id", "run_id"}),
        (SampleRow, SampleScore, {"id", "run_id"}),
    ],
)
def test_each_table_stores_every_field_of_its_record_as_declared(table, record, own):
    """The records (``mara_bench.leaderboards.records``) declare the fields; a table has a column for each (nullable exactly
    where the field may be ``None``) besides its own bookkeeping columns."""
    stored = [f for f in fields(record) if f.name not in store_module.RUN_LISTS]
    columns = {column.name: column for column in table.__table__.columns}
    assert set(columns) - own == {f.name for f in stored}
    assert {f.name for f in stored if "None" in str(f.type)} == {
        name for name, column in columns.items() if column.nullable and name not in own
    }
