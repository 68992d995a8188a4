"""Breakdowns: HLE accuracy and unscored per category (and raw_subject on request), WebWalkerQA per difficulty and
language, QA per hop type when the data carries it -- real evals with scripted models, compared with hand counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval

from mara_bench.catalog import get_benchmark
from mara_bench.harness.datasets import load_benchmark
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.testing import scripted_model

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"


def _metrics(log, score_name: str) -> dict[str, float]:
    return {
        name: metric.value
        for score in log.results.scores
        if score.name == score_name
        for name, metric in score.metrics.items()
    }


def test_hle_reports_accuracy_and_unscored_per_category_and_raw_subject_on_request():
    samples = list(load_benchmark("hle", data="samples").dataset)
    # categories: Math, Biology/Medicine, Physics, Other, Math; answer the 1st right, the 5th unjudgeable
    answers = {
        s.input: ("right" if i == 0 else "unjudgeable" if i == 4 else "wrong") for i, s in enumerate(samples)
    }

    def grade(messages, config):
        reply = next(answer for question, answer in answers.items() if question in messages[-1].text)
        if reply == "unjudgeable":
            return "not json at all"
        verdict = "yes" if reply == "right" else "no"
        return json.dumps(
            {"extracted_final_answer": reply, "reasoning": "r", "correct": verdict, "confidence": 50}
        )

    solver = scripted_model(lambda messages, config: answers[messages[-1].text])
    (log,) = eval(
        str(TASKS_DIR / "hle.py@hle"),
        task_args={"data": "samples", "system": "direct", "breakdown": "raw_subject"},
        model=solver,
        model_roles={"grader": scripted_model(grade)},
        display="none",
    )
    assert log.status == "success", log.error
    metrics = _metrics(log, "hle")
    assert metrics["accuracy"] == pytest.approx(1 / 5)
    assert metrics["category=Math/accuracy"] == pytest.approx(1 / 2)  # 1 right, 1 unscored (counts as wrong)
    assert metrics["category=Math/accuracy_judged"] == pytest.approx(1.0)
    assert (metrics["category=Math/n"], metrics["category=Math/unscored"]) == (2, 1)
    assert metrics["category=Physics/accuracy"] == 0 and metrics["category=Physics/unscored"] == 0
    assert metrics["raw_subject=Mathematics/accuracy"] == pytest.approx(1 / 2)
    assert metrics["raw_subject=Trivia/n"] == 1


def test_webwalkerqa_is_broken_down_by_difficulty_and_language():
    samples = list(load_benchmark("webwalkerqa", data="samples").dataset)
    # difficulties medium, medium, medium, hard, hard (all English): answer the first and the last right
    right = {samples[0].input, samples[4].input}
    solver = scripted_model(lambda messages, config: "A" if messages[-1].text in right else "B")

    def grade(messages, config):
        return "yes" if any(question in messages[-1].text for question in right) else "no"

    (log,) = eval(
        str(TASKS_DIR / "webwalkerqa.py@webwalkerqa"),
        task_args={"data": "samples", "system": "direct"},
        model=solver,
        model_roles={"grader": scripted_model(grade)},
        display="none",
    )
    assert log.status == "success", log.error
    metrics = _metrics(log, log.results.scores[0].name)
    assert metrics["difficulty_level=medium/accuracy"] == pytest.approx(1 / 3)
    assert metrics["difficulty_level=hard/accuracy"] == pytest.approx(1 / 2)
    assert (metrics["lang=en/accuracy"], metrics["lang=en/n"]) == (pytest.approx(2 / 5), 5)


def test_qa_hop_types_come_from_flashrag_metadata_and_are_absent_when_the_data_lacks_them(tmp_path):
    rows = [
        {"id": "1", "question": "q1", "golden_answers": ["a"], "metadata": {"type": "comparison"}},
        {"id": "2", "question": "q2", "golden_answers": ["b"], "metadata": {"type": "compositional"}},
        {"id": "3", "question": "q3", "golden_answers": ["c"], "metadata": {"type": "compositional"}},
    ]
    data = tmp_path / "dev.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    replies = {"q1": "a", "q2": "b", "q3": "wrong"}
    solver = scripted_model(lambda messages, config: replies[messages[-1].text.removeprefix("Question: ")])
    (log,) = eval(
        evaluation_task(get_benchmark("twowiki"), data=str(data), system="direct"),
        model=solver,
        display="none",
    )
    assert log.status == "success", log.error
    metrics = _metrics(log, "lexical")
    assert metrics["type=comparison/em"] == 1.0 and metrics["type=compositional/em"] == pytest.approx(1 / 2)
    # bundled samples carry no hop type: no breakdown, no error
    (plain,) = eval(
        evaluation_task(get_benchmark("twowiki"), data="samples", limit=2, system="direct"),
        model=scripted_model(lambda messages, config: "x"),
        display="none",
    )
    assert not any("type=" in name for name in _metrics(plain, "lexical"))
