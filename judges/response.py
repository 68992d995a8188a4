"""Where a scorer finds the text to judge: the answers a system stored with the sample.

The final answer is the sample's output (a system's solver makes its final answer the output; for a plain Inspect
solver it is the model's completion), unless a solver stored another text under ``answer.final``. Other named
answers live in the sample's store under ``answer.<name>`` (the V-C system stores ``answer.solver``, the Solver's
first answer).
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
