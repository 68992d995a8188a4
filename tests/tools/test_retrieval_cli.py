"""`mara index build` / `mara index query` end to end, in process, through the `mara` dispatcher."""

from __future__ import annotations

import json

import pytest
from huggingface_hub import try_to_load_from_cache

from mara_bench.harness.cli import main as mara
from mara_bench.harness.retrieval import DEFAULT_MODEL


def test_build_and_query_bm25(tmp_path, corpus, capsys):
    out = tmp_path / "bm25"
    assert mara(["index", "build", str(corpus), str(out), "--kind", "bm25"]) == 0
    captured = capsys.readouterr()
    assert "indexed 20 passages (bm25)" in captured.out
    size = corpus.stat().st_size  # the tqdm bars: corpus bytes read, then passages tokenised
    assert "reading corpus: 100%" in captured.err and f"{size / 1000:.2f}k/{size / 1000:.2f}k" in captured.err
    assert "tokenizing passages: 100%" in captured.err and "20/20" in captured.err
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


def test_malformed_corpus_line_exits_2_naming_file_line_and_field(tmp_path, capsys):
    corpus = tmp_path / "wiki.jsonl"
    corpus.write_text('{"id": "1", "contents": "\\"A\\"\\na"}\n{"id": "2", "content": "typo"}\n')
    assert mara(["index", "build", str(corpus), str(tmp_path / "out"), "--kind", "bm25"]) == 2
    assert capsys.readouterr().err.endswith(  # after the progress bar
        f"\nmara index: {corpus}:2: missing field 'contents' (corpus rows are {{'id', 'contents'}})\n"
    )


def test_build_defaults_to_e5_and_says_how_to_point_at_a_local_copy(tmp_path, corpus, capsys):
    if isinstance(try_to_load_from_cache(DEFAULT_MODEL, "config.json"), str):
        pytest.skip("E5 is in this machine's HF cache, so it loads")
    assert mara(["index", "build", str(corpus), str(tmp_path / "out")]) == 2  # E5 is not cached offline
    err = capsys.readouterr().err
    assert err.startswith("mara index: cannot load embedding model 'intfloat/e5-base-v2'")
    assert "pass its path with --model" in err


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    assert (
        mara(["index", "build", str(tmp_path / "missing.jsonl"), str(tmp_path / "out"), "--kind", "bm25"])
        == 2
    )
    assert "corpus file not found" in capsys.readouterr().err
    assert mara(["index", "query", str(tmp_path), "question"]) == 2
    assert "mara index build" in capsys.readouterr().err
