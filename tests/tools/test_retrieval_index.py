"""Retrieval indexes over the small test corpus: the real MiniLM model (dense) and BM25 find the right passages,
index directories round-trip, and bad input fails with a message naming what to fix."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from pathlib import Path

import bm25s
import faiss
import numpy as np
import pytest
import Stemmer
import torch
from huggingface_hub import try_to_load_from_cache

from mara_bench.harness.retrieval import (
    DEFAULT_MODEL,
    Passage,
    RetrievalError,
    TextEncoder,
    build_index,
    iter_corpus,
    load_index,
    split_contents,
)
from mara_bench.harness.retrieval import bm25 as bm25_module
from mara_bench.harness.retrieval.store import FAISS_INDEX

DENSE_QUESTIONS = {  # paraphrases with little word overlap: only meaning finds them
    "Which playwright wrote a tragedy about a Danish prince?": "doc2",
    "Who found the element radium?": "doc6",
    "What is the highest peak in the world?": "doc3",
    "Which painting by Leonardo hangs in the Louvre?": "doc15",
    "What is the capital city of Japan?": "doc16",
    "Which antibiotic did Fleming discover?": "doc10",
}
BM25_QUESTIONS = {
    "Satoshi Nakamoto cryptocurrency": "doc8",
    "bicycle race organized by L'Auto": "doc9",
    "Beethoven Ode to Joy symphony": "doc12",
    "Guido van Rossum": "doc4",
}


def test_split_contents_reads_wiki18_titles():
    assert split_contents('"Aaron"\nAaron is a prophet.') == ("Aaron", "Aaron is a prophet.")
    assert split_contents("Plain title\nline one\nline two") == ("Plain title", "line one\nline two")
    assert split_contents("no title line") == ("", "no title line")


@pytest.mark.parametrize(("question", "expected"), DENSE_QUESTIONS.items())
def test_dense_index_finds_the_passage(dense_index, question, expected):
    top = load_index(dense_index).search(question, k=3)
    assert top[0].id == expected
    assert [p.score for p in top] == sorted((p.score for p in top), reverse=True)


def test_dense_passages_carry_title_text_and_inner_product_score(dense_index, minilm, corpus):
    index = load_index(dense_index)
    best = index.search("What is the highest peak in the world?", k=1)[0]
    assert best.title == "Mount Everest"
    assert best.text.startswith("Mount Everest is Earth's highest mountain")
    query = TextEncoder(minilm).encode_queries(["What is the highest peak in the world?"])[0]
    stored = faiss.read_index(str(dense_index / FAISS_INDEX)).reconstruct(3)
    assert best.score == pytest.approx(float(query @ stored), abs=1e-5)


def test_prefixes_are_applied_and_embeddings_normalised(minilm):
    encoder = TextEncoder(minilm, query_prefix="query: ", passage_prefix="passage: ")
    raw = encoder.model.encode(["query: tall mountains", "tall mountains", "passage: tall mountains"])
    raw = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    query = encoder.encode_queries(["tall mountains"])[0]
    passage = encoder.encode_passages(["tall mountains"])[0]
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(query, raw[0], atol=1e-5)
    np.testing.assert_allclose(passage, raw[2], atol=1e-5)
    assert not np.allclose(query, raw[1], atol=1e-3)  # the prefix changes the embedding


def test_queries_are_mean_pooled_over_their_tokens_then_normalised(minilm):
    from transformers import AutoModel, AutoTokenizer

    texts = ["query: tall mountains", "query: who wrote the play Hamlet?"]
    tokenizer, model = AutoTokenizer.from_pretrained(minilm), AutoModel.from_pretrained(minilm).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state.numpy()
    mask = batch["attention_mask"].numpy()[:, :, None]
    mean = (hidden * mask).sum(axis=1) / mask.sum(axis=1)  # padding tokens left out of the mean
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    cls = hidden[:, 0] / np.linalg.norm(hidden[:, 0], axis=1, keepdims=True)
    encoded = TextEncoder(minilm).encode_queries(["tall mountains", "who wrote the play Hamlet?"])
    np.testing.assert_allclose(encoded, mean, atol=1e-5)
    assert np.abs(encoded - cls).max() > 0.1  # not CLS pooling


def test_a_plain_transformers_checkpoint_gets_mean_pooling_too(minilm, tmp_path):
    plain = (
        tmp_path / "plain"
    )  # no modules.json / 1_Pooling: sentence-transformers falls back to mean pooling
    plain.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (plain / name).symlink_to(Path(minilm) / name)
    encoder = TextEncoder(str(plain))
    assert encoder.pooling == "mean"
    np.testing.assert_allclose(
        encoder.encode_passages(["Tokyo is the capital of Japan."]),
        TextEncoder(minilm).encode_passages(["Tokyo is the capital of Japan."]),
        atol=1e-5,
    )


def test_e5_stays_the_default_model_and_a_missing_copy_is_a_clear_error(tmp_path, corpus):
    assert DEFAULT_MODEL == "intfloat/e5-base-v2"
    for user_facing in (TextEncoder, build_index):
        assert inspect.signature(user_facing).parameters["model"].default == DEFAULT_MODEL
    if isinstance(try_to_load_from_cache(DEFAULT_MODEL, "config.json"), str):
        pytest.skip("E5 is in this machine's HF cache, so it loads")
    with pytest.raises(
        RetrievalError, match=r"(?s)cannot load embedding model 'intfloat/e5-base-v2'.*--model"
    ):
        build_index(corpus, tmp_path / "out", progress=False)  # offline and not cached here
    assert not (tmp_path / "out").exists()  # the model is loaded before the corpus is copied


def test_dense_round_trip_keeps_manifest_embeddings_and_results(dense_index, minilm, corpus):
    manifest = json.loads((dense_index / "manifest.json").read_text())
    assert manifest["kind"] == "dense"
    assert manifest["count"] == 20
    assert manifest["dimension"] == 384
    assert manifest["model"] == minilm
    assert (manifest["query_prefix"], manifest["passage_prefix"]) == ("query: ", "passage: ")
    assert manifest["params"]["pooling"] == "mean"
    assert manifest["corpus_sha256"] == hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert manifest["dense_index"] == {
        "index_type": "Flat",
        "search_params": "",
        "train_rows": 0,
        "recall_k": 10,
        "recall_at_k": 1.0,
        "recall_queries": 0,
    }
    assert not (dense_index / "embeddings.npy").exists()  # the index is the only copy of the vectors
    flat = faiss.read_index(str(dense_index / FAISS_INDEX))
    stored = flat.reconstruct_n(0, flat.ntotal)
    assert stored.shape == (20, 384)
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, atol=1e-5)
    first, second = load_index(dense_index), load_index(dense_index)
    questions = list(DENSE_QUESTIONS)
    assert first.search_many(questions, k=4) == second.search_many(questions, k=4)
    batched, single = first.search_many(questions, k=4), [first.search(q, k=4) for q in questions]
    assert [[p.id for p in found] for found in batched] == [[p.id for p in found] for found in single]
    np.testing.assert_allclose(  # padding in a batch moves scores by float noise only
        [[p.score for p in found] for found in batched],
        [[p.score for p in found] for found in single],
        atol=1e-4,
    )


def test_k_larger_than_corpus_returns_every_passage_once(dense_index):
    found = load_index(dense_index).search("anything", k=50)
    assert sorted(p.id for p in found) == sorted(f"doc{i}" for i in range(20))


@pytest.mark.parametrize(("question", "expected"), BM25_QUESTIONS.items())
def test_bm25_index_finds_the_passage(bm25_index, question, expected):
    assert load_index(bm25_index).search(question, k=3)[0].id == expected


def test_bm25_score_matches_the_lucene_formula_with_flashrag_parameters(bm25_index, corpus):
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    tokens = bm25s.tokenize(
        [r["contents"] for r in rows],
        stopwords="en",
        stemmer=Stemmer.Stemmer("english"),
        return_ids=False,
        show_progress=False,
    )
    lengths = [len(t) for t in tokens]
    average = sum(lengths) / len(lengths)
    k1, b, n, df = 1.5, 0.75, 20, 1  # bm25s's defaults, which FlashRAG keeps; "nakamoto" occurs once, in doc8
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    tf = tokens[8].count("nakamoto")
    expected = idf * tf / (tf + k1 * (1 - b + b * lengths[8] / average))  # Lucene drops the constant (k1 + 1)
    [hit] = load_index(bm25_index).search("Nakamoto", k=3)  # no other passage shares a term
    assert hit == Passage(
        id="doc8",
        title="Bitcoin",
        text=hit.text,
        score=pytest.approx(expected, rel=1e-4),
        contents=hit.contents,
    )
    assert hit.contents == f'"Bitcoin"\n{hit.text}'  # the corpus row verbatim


def test_bm25_tokenised_in_chunks_scores_like_one_pass(bm25_index, corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(bm25_module, "TOKENIZE_CHUNK", 3)  # 20 passages: 7 chunks, the last one short
    build_index(corpus, tmp_path / "chunked", kind="bm25", progress=False)
    questions = [*BM25_QUESTIONS, "Paris tower engineer", "capital of Japan"]
    assert load_index(tmp_path / "chunked").search_many(questions, k=5) == load_index(bm25_index).search_many(
        questions, k=5
    )


def test_bm25_query_without_known_terms_finds_nothing(bm25_index):
    assert load_index(bm25_index).search("zzzz qqqq", k=5) == []


def test_bad_k_is_refused(bm25_index):
    with pytest.raises(ValueError, match="k must be at least 1"):
        load_index(bm25_index).search("x", k=0)


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"id": 2, "text": "no contents"}', r"bad\.jsonl:3: missing field 'contents'"),
        ('{"contents": "no id"}', r"bad\.jsonl:3: missing field 'id'"),
        (
            '{"id": null, "contents": "x"}',
            r"bad\.jsonl:3: field 'id' must be a string or an integer, got None",
        ),
        ('{"id": "d", "contents": ["x"]}', r"bad\.jsonl:3: field 'contents' must be a string, got list"),
        ('["d", "x"]', r"bad\.jsonl:3: expected a JSON object with 'id' and 'contents'"),
        ('{"id": "d", "contents": "x"', r"bad\.jsonl:3: not a JSON object"),
    ],
)
def test_malformed_corpus_rows_name_file_line_and_field(tmp_path, bad_line, message):
    corpus = tmp_path / "bad.jsonl"
    corpus.write_text('{"id": 1, "contents": "a\\nb"}\n\n' + bad_line + "\n")
    with pytest.raises(RetrievalError, match=message):
        build_index(corpus, tmp_path / "out", kind="bm25", progress=False)


def test_corpus_ids_may_be_integers_and_blank_lines_are_skipped(tmp_path):
    corpus = tmp_path / "ints.jsonl"
    corpus.write_text('{"id": 7, "contents": "\\"Seven\\"\\nseven"}\n\n{"id": "x", "contents": "ex"}\n')
    assert list(iter_corpus(corpus)) == [("7", '"Seven"\nseven'), ("x", "ex")]


def test_empty_corpus_is_refused(tmp_path):
    corpus = tmp_path / "empty.jsonl"
    corpus.write_text("\n")
    with pytest.raises(RetrievalError, match="empty.jsonl has no passages"):
        build_index(corpus, tmp_path / "out", kind="bm25", progress=False)


def test_output_dir_and_index_dir_errors(tmp_path, corpus):
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("keep me")
    with pytest.raises(RetrievalError, match="not empty and holds no index"):
        build_index(corpus, occupied, kind="bm25", progress=False)
    assert (occupied / "notes.txt").read_text() == "keep me"
    with pytest.raises(RetrievalError, match="no manifest.json.*mara index build"):
        load_index(occupied)
    with pytest.raises(RetrievalError, match="corpus file not found"):
        build_index(tmp_path / "missing.jsonl", tmp_path / "new", kind="bm25", progress=False)
    with pytest.raises(RetrievalError, match="unknown index kind 'colbert'"):
        build_index(corpus, tmp_path / "new", kind="colbert", progress=False)


def test_rebuilding_over_an_existing_index_replaces_it(tmp_path, corpus):
    out = tmp_path / "index"
    small = tmp_path / "small.jsonl"
    small.write_text('{"id": "only", "contents": "\\"Solo\\"\\nThe only passage about zebras."}\n')
    build_index(corpus, out, kind="bm25", progress=False)
    build_index(small, out, kind="bm25", progress=False)
    index = load_index(out)
    assert len(index) == 1
    assert index.search("zebras", k=3) == [
        Passage(
            "only",
            "Solo",
            "The only passage about zebras.",
            index.search("zebras")[0].score,
            index.search("zebras")[0].contents,
        )
    ]


def test_a_corpus_with_a_bad_line_leaves_nothing_behind(tmp_path, corpus):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(corpus.read_text() + '{"id": "broken"\n')
    out = tmp_path / "indexes" / "new"
    with pytest.raises(RetrievalError, match=r"bad\.jsonl:21: not a JSON object"):
        build_index(bad, out, kind="bm25", progress=False)
    assert not out.exists() and list(out.parent.iterdir()) == []  # no half-written index, no temporary dir


def test_a_failed_rebuild_keeps_the_previous_index(tmp_path, corpus):
    out = tmp_path / "index"
    build_index(corpus, out, kind="bm25", progress=False)
    before = sorted(path.name for path in out.iterdir())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "contents": "fine"}\n["not", "a", "row"]\n')
    with pytest.raises(RetrievalError, match=r"bad\.jsonl:2: expected a JSON object"):
        build_index(bad, out, kind="bm25", progress=False)
    assert sorted(path.name for path in out.iterdir()) == before
    assert len(load_index(out)) == 20
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bad.jsonl", "index"]
