"""`mara index build` / `mara index query` end to end, in process, through the `mara` dispatcher."""

from __future__ import annotations

import json

from harness.cli import main as mara


def test_build_and_query_bm25(tmp_path, corpus, capsys):
    out = tmp_path / "bm25"
    assert mara(["index", "build", str(corpus), str(out), "--kind", "bm25"]) == 0
    assert "indexed 20 passages (bm25)" in capsys.readouterr().out
    assert json.loads((out / "manifest.json").read_text())["kind"] == "bm25"
    assert mara(["index", "query", str(out), "Satoshi Nakamoto invented which currency?", "-k", "2"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("[1] Bitcoin (id doc8, score ")
    assert "Bitcoin is the first decentralized cryptocurrency." in printed


def test_build_dense_with_model_batch_size_and_progress_bar(tmp_path, corpus, minilm, capsys):
    out = tmp_path / "dense"
    code = mara(
        ["index", "build", str(corpus), str(out), "--kind", "e5", "--model", minilm, "--batch-size", "7"]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert "embedding passages" in captured.err and "20/20" in captured.err  # the tqdm bar
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["kind"], manifest["model"], manifest["count"]) == ("dense", minilm, 20)
    assert mara(["index", "query", str(out), "What is the capital city of Japan?", "-k", "1"]) == 0
    assert capsys.readouterr().out.startswith("[1] Tokyo (id doc16, score 0.")


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    assert (
        mara(["index", "build", str(tmp_path / "missing.jsonl"), str(tmp_path / "out"), "--kind", "bm25"])
        == 2
    )
    assert "corpus file not found" in capsys.readouterr().err
    assert mara(["index", "query", str(tmp_path), "question"]) == 2
    assert "mara index build" in capsys.readouterr().err
