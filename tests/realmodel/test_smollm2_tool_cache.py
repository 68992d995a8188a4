"""A search SmolLM2 really writes, recorded and replayed: M-ASK's Search agent (the real model) chooses the queries
over a local BM25 index; the replay serves every one of them from the snapshot, reads no index, and the episode
repeats exactly."""

from __future__ import annotations

import json

import pytest
from inspect_ai import eval

from mara_bench.harness.retrieval.cli import main as index_main

pytestmark = pytest.mark.realmodel

COUNTRIES = [("Veltoria", "Marnesh"), ("Drovania", "Tellis"), ("Quessa", "Bralon"), ("Sorvia", "Kettleby")]


def run(tmp_path, mode: str, index: str):
    [log] = eval(
        "mara_bench/bamboogle",
        task_args={
            "data": str(tmp_path / "questions.jsonl"),
            "system": "mask",
            "prompts": "compact",
            "index": index,
            "tool_cache": mode,
            "tool_snapshot": "night1",
            "tool_store": str(tmp_path / "store"),
            "protocol": "quick",
        },
        model="local/smollm2-135m",
        max_tokens=32,
        log_dir=str(tmp_path / f"logs-{mode}"),
        display="none",
    )
    assert log.status == "success", log.error
    metrics = {name: m.value for score in log.results.scores for name, m in score.metrics.items()}
    return log, metrics


def test_searches_the_model_writes_are_recorded_and_replayed_without_the_index(smollm2, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "id": str(i),
                    "contents": f"{country}\n{country} is a small country. Its capital is {capital}.",
                }
            )
            + "\n"
            for i, (country, capital) in enumerate(COUNTRIES)
        )
    )
    (tmp_path / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "question": "What is the capital of Veltoria?", "answer": "Marnesh"}) + "\n"
    )
    index = tmp_path / "idx"
    assert index_main(["build", str(corpus), str(index), "--kind", "bm25"]) == 0
    recorded, night1 = run(tmp_path, "record", str(index))
    assert night1["tool_calls_retrieve"] >= 1 and night1["tool_cache_record"] == night1["tool_calls"]

    replayed, night2 = run(tmp_path, "replay", str(index))
    assert night2["tool_cache_hit"] == night1["tool_cache_record"]
    assert night2["tool_cache_miss"] == 0 and night2["tool_cache_live"] == 0
    assert replayed.samples[0].output.completion == recorded.samples[0].output.completion
