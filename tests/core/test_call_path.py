"""The path a task's ``-T`` arguments take (``tests/core/call_path.py``): the task hands its own benchmark spec
over, the system is looked up by the evaluation and, from its logged name, by the Inspect solver, and the only
calls up a floor are callbacks into code that handed itself down."""

from __future__ import annotations

from call_path import trace_task_creation

CALLBACKS = {"wrapper", "validate"}
"""``one_line_errors``' wrapper calling the task it wraps; pydantic's ``validate`` calling a settings validator."""


def test_the_task_path_finds_its_spec_without_a_look_up_and_its_system_twice():
    found = trace_task_creation()
    assert found.calls["get_benchmark"] == 0
    assert found.calls["get_system"] == 2
    assert found.calls["split_options"] == 2 and found.calls["check_names"] == 3


def test_the_task_path_climbs_a_floor_only_in_callbacks():
    found = trace_task_creation()
    assert found.moves_up, "the wrapper's call into the task is a move up"
    assert {caller for _, caller, _, _ in found.moves_up} <= CALLBACKS, found.moves_up
