"""Retrieval at any size: streamed FAISS builds of any factory type (memory bounded whatever the corpus size,
files byte for byte FAISS's own), memory-mapped loading, FlashRAG's artefacts imported in place, and BM25 scores
equal to bm25s configured as FlashRAG configures it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import bm25s
import faiss
import numpy as np
import pytest
import Stemmer
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log

from mara_bench.harness.cli import main as mara
from mara_bench.harness.retrieval import RetrievalError, TextEncoder, build_index, load_index
from mara_bench.harness.retrieval import bm25 as bm25_module
from mara_bench.harness.retrieval.faiss_build import (
    build_faiss_index,
    measure_recall,
    new_index,
    read_faiss,
    write_flat_codes,
)
from mara_bench.harness.retrieval.vector_file import VectorFile
from mara_bench.harness.testing import scripted_model

ROOT = Path(__file__).resolve().parents[2]
RSS_PROBE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from mara_bench.harness.retrieval.faiss_build import build_faiss_index
    from mara_bench.harness.retrieval.vector_file import VectorFile

    rows, out = int(sys.argv[1]), Path(sys.argv[2])
    vectors = VectorFile(out / "vectors.f32", 128)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((64, 128)).astype(np.float32)
    with vectors.path.open("wb") as handle:
        for start in range(0, rows, 10_000):
            block = centres[rng.integers(0, 64, 10_000)] + 0.3 * rng.standard_normal((10_000, 128))
            vectors.append(handle, block[: min(10_000, rows - start)].astype(np.float32))
    def status(field):
        line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field + ":"))
        return int(line.split()[1]) * 1024

    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS (VmHWM) restarts from the current RSS
    before = status("VmRSS")
    quality = build_faiss_index(vectors, "IVF64,PQ16x4", out / "index.faiss", train_rows=10_000, search_params="nprobe=8")
    print(status("VmHWM") - before)
    """
)


def _clustered(rows: int, dimension: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((16, dimension))
    vectors = centres[rng.integers(0, 16, rows)] + 0.5 * rng.standard_normal((rows, dimension))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _vector_file(path: Path, vectors: np.ndarray) -> VectorFile:
    file = VectorFile(path, vectors.shape[1])
    with path.open("wb") as handle:
        file.append(handle, vectors)
    return file


def test_streamed_ivf_pq_build_peak_memory_does_not_grow_with_the_corpus(tmp_path):
    """The raw vectors (128 floats a row) are 31 MiB at 60k rows and 122 MiB at 240k; the build's peak RSS
    above the process's peak before it stays under 48 MiB at both sizes: training sample, blocks, PQ codes."""
    grown = {}
    for rows in (60_000, 240_000):
        out = tmp_path / str(rows)
        out.mkdir()
        result = subprocess.run(
            [sys.executable, "-c", RSS_PROBE, str(rows), str(out)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        )
        grown[rows] = int(result.stdout)
        assert faiss.read_index(str(out / "index.faiss"), faiss.IO_FLAG_MMAP_IFC).ntotal == rows
    assert max(grown.values()) < 48 * 2**20 < 240_000 * 128 * 4, grown


@pytest.mark.parametrize("index_type", ["Flat", "SQfp16", "SQ8", "PQ8x4"])
def test_streamed_one_code_per_vector_file_is_faiss_write_index_byte_for_byte(tmp_path, index_type):
    vectors = _clustered(3_000)
    index = new_index(index_type, 32)
    if not index.is_trained:
        index.train(vectors)
    write_flat_codes(index, 3_000, tmp_path / "streamed", iter([vectors[:1_000], vectors[1_000:]]))
    index.add(vectors)
    faiss.write_index(index, str(tmp_path / "faiss"))
    assert (tmp_path / "streamed").read_bytes() == (tmp_path / "faiss").read_bytes()


@pytest.mark.parametrize("index_type", ["Flat", "SQfp16", "IVF32,Flat", "IVF32,PQ8x4", "HNSW16"])
def test_memory_mapped_index_searches_like_the_in_memory_one(tmp_path, index_type):
    vectors = _vector_file(tmp_path / "vectors.f32", _clustered(5_000))
    quality = build_faiss_index(vectors, index_type, tmp_path / "index.faiss", train_rows=2_000)
    queries = _clustered(50, seed=1)
    mapped = read_faiss(tmp_path / "index.faiss")
    in_memory = faiss.read_index(str(tmp_path / "index.faiss"))
    mapped_scores, mapped_rows = mapped.search(queries, 10)
    scores, rows = in_memory.search(queries, 10)
    np.testing.assert_array_equal(mapped_rows, rows)
    np.testing.assert_array_equal(mapped_scores, scores)
    assert quality.index_type == index_type and quality.recall_k == 10
    assert quality.recall_at_k == 1.0 if index_type == "Flat" else 0.0 < quality.recall_at_k <= 1.0


def test_recall_is_measured_against_exact_search_and_search_params_apply(tmp_path):
    vectors = _vector_file(tmp_path / "vectors.f32", _clustered(4_000))
    one = build_faiss_index(vectors, "IVF64,Flat", tmp_path / "a.faiss", train_rows=4_000)
    every = build_faiss_index(
        vectors, "IVF64,Flat", tmp_path / "b.faiss", train_rows=4_000, search_params="nprobe=64"
    )
    assert every.recall_at_k == 1.0  # every list probed: exact
    assert one.recall_at_k < 0.9 and one.recall_queries == 256 and one.train_rows == 4_000 - 256
    rows = np.arange(0, 4_000, 40)
    stored = vectors.read(0, 4_000)
    exact = np.argsort(-(stored[rows] @ stored.T), axis=1)[:, :10]
    _, found = read_faiss(tmp_path / "a.faiss").search(stored[rows], 10)
    by_hand = np.mean(
        [len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), exact.tolist(), strict=True)]
    )
    assert measure_recall(read_faiss(tmp_path / "a.faiss"), vectors, rows, 10) == pytest.approx(by_hand)


def test_dense_build_records_index_type_and_recall_in_the_manifest(tmp_path, corpus, minilm, capsys):
    out = tmp_path / "hnsw"
    assert mara(["index", "build", str(corpus), str(out), "--model", minilm, "--index-type", "HNSW8"]) == 0
    assert "indexed 20 passages (dense HNSW8, recall@10 vs Flat 1.000)" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["dense_index"]["index_type"] == "HNSW8" and manifest["dense_index"]["recall_at_k"] == 1.0
    assert sorted(p.name for p in out.iterdir()) == [
        "index.faiss",
        "manifest.json",
        "offsets.npy",
        "passages.jsonl",
    ]
    assert load_index(out).search("Who found the element radium?", k=1)[0].id == "doc6"


def test_unknown_index_type_fails_before_any_work(tmp_path, corpus, capsys):
    assert mara(["index", "build", str(corpus), str(tmp_path / "x"), "--index-type", "IVFbad"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mara index: index type 'IVFbad' is not a faiss.index_factory string")
    assert len(err.splitlines()) == 1 and not (tmp_path / "x").exists() and list(tmp_path.iterdir()) == []


def test_more_ivf_lists_than_passages_fails_before_encoding(tmp_path, corpus, minilm, capsys, monkeypatch):
    monkeypatch.setattr(TextEncoder, "encode_passages", lambda *args: pytest.fail("encoded before the check"))
    assert (
        mara(
            [
                "index",
                "build",
                str(corpus),
                str(tmp_path / "x"),
                "--model",
                minilm,
                "--index-type",
                "IVF64,Flat",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "mara index: index type 'IVF64,Flat' has 64 IVF lists but the corpus has 20 passages; "
        "choose fewer lists (IVF4: about sqrt(N)) or Flat"
    )
    assert list(tmp_path.iterdir()) == []


def _flashrag_artefacts(directory: Path, corpus: Path, minilm: str) -> tuple[Path, Path]:
    """A FAISS index and a bm25s folder laid out as FlashRAG's index_builder writes them (its calls, here)."""
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    embeddings = TextEncoder(minilm).encode_passages([row["contents"] for row in rows])
    index = faiss.index_factory(embeddings.shape[1], "Flat", faiss.METRIC_INNER_PRODUCT)
    index.add(embeddings)
    faiss.write_index(index, str(directory / "e5_Flat.index"))
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    tokens = tokenizer.tokenize([row["contents"] for row in rows], return_as="tuple", show_progress=False)
    retriever = bm25s.BM25(corpus=rows)
    retriever.index(tokens, show_progress=False)
    retriever.save(str(directory / "bm25"), corpus=None)
    tokenizer.save_vocab(str(directory / "bm25"))
    tokenizer.save_stopwords(str(directory / "bm25"))
    return directory / "e5_Flat.index", directory / "bm25"


def test_import_serves_flashrag_corpus_and_indexes_in_place(tmp_path, corpus, minilm, capsys, monkeypatch):
    released = tmp_path / "released"
    released.mkdir()
    (released / "wiki.jsonl").write_bytes(corpus.read_bytes())
    faiss_file, bm25_dir = _flashrag_artefacts(released, corpus, minilm)
    monkeypatch.chdir(tmp_path)  # paths typed relative to the working directory
    assert (
        mara(
            [
                "index",
                "import",
                "dense",
                "--corpus",
                "released/wiki.jsonl",
                "--faiss",
                "released/e5_Flat.index",
                "--model",
                minilm,
            ]
        )
        == 0
    )
    assert (
        mara(["index", "import", "sparse", "--corpus", "released/wiki.jsonl", "--bm25", "released/bm25"]) == 0
    )
    printed = capsys.readouterr().out
    assert "imported 20 passages (dense Flat, recall@10 vs Flat 1.000) into dense, checked" in printed
    assert "imported 20 passages (bm25) into sparse, checked" in printed
    assert (tmp_path / "dense" / "index.faiss").resolve() == faiss_file  # served, not copied
    assert (tmp_path / "dense" / "passages.jsonl").resolve() == released / "wiki.jsonl"
    assert (tmp_path / "sparse" / "bm25").resolve() == bm25_dir
    dense = load_index(tmp_path / "dense")
    assert dense.search("Who found the element radium?", k=1)[0].id == "doc6"
    ours = build_index(corpus, tmp_path / "ours", kind="bm25", progress=False)
    assert ours.count == 20
    questions = ["Satoshi Nakamoto cryptocurrency", "Beethoven Ode to Joy symphony", "discovering radium"]
    assert load_index(tmp_path / "sparse").search_many(questions, 5) == load_index(
        tmp_path / "ours"
    ).search_many(questions, 5)


def test_import_refuses_an_index_of_another_corpus_with_one_line_and_leaves_nothing(
    tmp_path, corpus, minilm, capsys
):
    faiss_file, bm25_dir = _flashrag_artefacts(tmp_path, corpus, minilm)
    shorter = tmp_path / "shorter.jsonl"
    shorter.write_text("".join(corpus.read_text().splitlines(keepends=True)[:19]))
    assert (
        mara(["index", "import", str(tmp_path / "a"), "--corpus", str(shorter), "--faiss", str(faiss_file)])
        == 2
    )
    assert (
        mara(["index", "import", str(tmp_path / "b"), "--corpus", str(shorter), "--bm25", str(bm25_dir)]) == 2
    )
    errors = [line for line in capsys.readouterr().err.splitlines() if "mara index" in line]
    assert errors == [
        f"mara index: {faiss_file} holds 20 vectors but the corpus has 19 rows; import the index built from this "
        "corpus",
        f"mara index: {bm25_dir} indexes 20 passages but the corpus has 19 rows; import the index built from this "
        "corpus",
    ]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_import_finds_rows_out_of_corpus_order(tmp_path, corpus, minilm):
    faiss_file, _ = _flashrag_artefacts(tmp_path, corpus, minilm)
    lines = corpus.read_text().splitlines(keepends=True)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("".join([lines[-1], *lines[1:-1], lines[0]]))
    with pytest.raises(RetrievalError, match="corpus row 0 .* does not come first"):
        from mara_bench.harness.retrieval.importer import import_flashrag

        import_flashrag(tmp_path / "out", shuffled, faiss_index=faiss_file, model=minilm, progress=False)


def _flashrag_bm25(texts: list[str]) -> bm25s.BM25:
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    retriever = bm25s.BM25()
    retriever.index(tokenizer.tokenize(texts, return_as="tuple", show_progress=False), show_progress=False)
    retriever.tokenizer = tokenizer
    return retriever


def _generated_corpus(path: Path, source: Path, rows: int) -> None:
    words = sorted(
        {w for line in source.read_text().splitlines() for w in json.loads(line)["contents"].split()}
    )
    rng = random.Random(0)
    texts = [f'"Topic {i}"\n' + " ".join(rng.choices(words, k=rng.randint(0, 60))) for i in range(rows)]
    path.write_text("".join(json.dumps({"id": str(i), "contents": t}) + "\n" for i, t in enumerate(texts)))


@pytest.mark.parametrize("shipped", [True, False], ids=["shipped-corpus", "generated-2000"])
def test_bm25_scores_equal_bm25s_configured_like_flashrag(tmp_path, corpus, monkeypatch, shipped):
    source = corpus if shipped else tmp_path / "generated.jsonl"
    if not shipped:
        _generated_corpus(source, corpus, 2_000)
        monkeypatch.setattr(bm25_module, "TOKENIZE_CHUNK", 300)  # chunks over a growing vocabulary
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    build_index(source, tmp_path / "ours", kind="bm25", progress=False)
    reference = _flashrag_bm25([row["contents"] for row in rows])
    questions = [
        "Who discovered radium and polonium?",
        "running cities of Japan",
        "the",
        "Satoshi Nakamoto",
        "x y",
    ]
    tokens = reference.tokenizer.tokenize(
        questions, update_vocab="never", return_as="string", show_progress=False
    )
    expected_rows, expected_scores = reference.retrieve(tokens, k=10, show_progress=False)
    found = load_index(tmp_path / "ours").search_many(questions, 10)
    assert [[(p.id, p.score) for p in passages] for passages in found] == [
        [(rows[r]["id"], float(s)) for r, s in zip(row_list, score_list, strict=True) if s > 0]
        for row_list, score_list in zip(expected_rows.tolist(), expected_scores.tolist(), strict=True)
    ]
    assert any(found)
    saved = tmp_path / "ours" / "bm25"
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(np.load(saved / f"{name}.csc.index.npy"), reference.scores[name])


def test_the_eval_log_records_the_index_type_and_its_recall(tmp_path, corpus, minilm):
    index = tmp_path / "index"
    build_index(corpus, index, model=minilm, index_type="HNSW8", progress=False)
    (log,) = inspect_eval(
        str(ROOT / "tasks" / "qa.py@nq"),
        task_args={"data": "samples", "limit": 1, "system": "react", "tools": "search", "index": str(index)},
        model=scripted_model(lambda messages, config: "<answer>Paris</answer>"),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    record = read_eval_log(log.location, header_only=True).eval.metadata["retrieval_index"]
    assert record["directory"] == str(index) and record["kind"] == "dense" and record["count"] == 20
    assert record["dense_index"] == json.loads((index / "manifest.json").read_text())["dense_index"]
    assert record["dense_index"]["index_type"] == "HNSW8" and record["dense_index"]["recall_k"] == 10


def test_an_imported_corpus_with_integer_ids_gives_string_ids(tmp_path, corpus, minilm):
    numbered = tmp_path / "numbered.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    numbered.write_text(
        "".join(json.dumps({"id": i, "contents": r["contents"]}) + "\n" for i, r in enumerate(rows))
    )
    _, bm25_dir = _flashrag_artefacts(tmp_path, numbered, minilm)
    from mara_bench.harness.retrieval.importer import import_flashrag

    import_flashrag(tmp_path / "out", numbered, bm25_dir=bm25_dir, progress=False)
    assert load_index(tmp_path / "out").search("Satoshi Nakamoto", k=1)[0].id == "8"
