"""Where a scorer finds the text to judge: the answers a system stored with the sample.

Systems store each named answer in the sample's store under ``answer.<name>`` (``answer.final`` for the system's
final answer; the V-C system also stores ``answer.solver``, the Solver's first answer). When a sample was produced
by a plain Inspect solver that stored nothing, the final answer is the model's completion.
"""

from __future__ import annotations

from inspect_ai.solver import TaskState

FINAL = "final"


def store_key(which: str) -> str:
    return f"answer.{which}"


def response_to_judge(state: TaskState, which: str = FINAL) -> str | None:
    """The response text for answer ``which``; ``None`` when the run produced no such answer."""
    stored = state.store.get(store_key(which))
    if stored is not None:
        return str(stored)
    if which == FINAL:
        return state.output.completion if state.output else None
    return None
