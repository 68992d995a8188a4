"""The path a task's ``-T`` arguments take (``tests/core/call_path.py``): the task hands its own benchmark spec
over, the evaluation looks the system up once, checks the ``-T`` names and values once (``SystemSpec.setup``) and
hands the set-up system down to the Inspect solver, and the only calls up a floor are callbacks into code that
handed itself down."""

from __future__ import annotations

from pathlib import Path

import pytest
from call_path import trace_task_creation

CALLBACKS = {"wrapper", "validate"}
"""``one_line_errors``' wrapper calling the task it wraps; pydantic's ``validate`` calling a settings validator."""

CORPUS = Path(__file__).parents[1] / "tools" / "data" / "corpus.jsonl"


@pytest.fixture(scope="module")
def matpo_arguments(tmp_path_factory) -> dict[str, str]:
    """``-T system=matpo data=samples index=DIR``: a system with tools, over a small BM25 index."""
    from mara_bench.harness.retrieval import build_index

    index = tmp_path_factory.mktemp("bm25") / "index"
    build_index(CORPUS, index, kind="bm25", progress=False)
    return {"system": "matpo", "data": "samples", "index": str(index)}


def test_the_task_path_finds_its_spec_without_a_look_up_and_its_system_once():
    found = trace_task_creation()
    assert found.calls["get_benchmark"] == 0
    assert found.calls["get_system"] == 1
    assert found.calls["setup"] == 1 and found.calls["check_names"] == 1


def test_a_system_with_options_and_tools_is_looked_up_and_checked_once(matpo_arguments):
    found = trace_task_creation("bamboogle", **matpo_arguments)
    assert found.calls["get_benchmark"] == 0
    assert found.calls["get_system"] == 1
    assert found.calls["setup"] == 1 and found.calls["check_names"] == 1


def test_the_task_path_climbs_a_floor_only_in_callbacks(matpo_arguments):
    for found in (trace_task_creation(), trace_task_creation("bamboogle", **matpo_arguments)):
        assert found.moves_up, "the wrapper's call into the task is a move up"
        assert {caller for _, caller, _, _ in found.moves_up} <= CALLBACKS, found.moves_up
