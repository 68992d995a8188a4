"""The systems -> methods contract is typed: every field of the shared types is documented where it is declared,
and a system's recorded outcome reads back through its class (also after the Episode is serialised)."""

from __future__ import annotations

import ast
import inspect

import pytest
from _method_helpers import run

import mara_bench.core.episodes as types
import mara_bench.harness.systems.outcomes as outcomes
from mara_bench.core.episodes import Episode
from mara_bench.harness.systems.outcomes import VerifierOutcome, WorkerOutcome


@pytest.mark.parametrize("module", [types, outcomes])
def test_every_field_of_the_shared_types_is_documented(module):
    tree = ast.parse(inspect.getsource(module))
    undocumented = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for index, statement in enumerate(body):
            if isinstance(statement, ast.AnnAssign):
                following = body[index + 1] if index + 1 < len(body) else None
                documented = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                if not documented:
                    undocumented.append(f"{node.name}.{statement.target.id}")
    assert undocumented == []


def test_a_recorded_outcome_reads_back_through_its_class_after_serialisation():
    episode = run(
        "vc",
        "What is 3 + 4?",
        {
            "solver": ["\\boxed{5}"],
            "verifier": ["Off.\n\n**Correctness**: Wrong", "**Correctness**: Correct"],
            "corrector": ["\\boxed{7}"],
        },
        accept_after=1,
        max_iterations=1,
    )
    restored = Episode.from_dict(episode.to_dict())
    assert VerifierOutcome.of(restored.calls[1].meta) == VerifierOutcome(False, False, 0)
    assert VerifierOutcome.of(restored.calls[3].meta) == VerifierOutcome(True, False, 2)
    assert not VerifierOutcome.recorded(restored.calls[0].meta)
    with pytest.raises(KeyError, match="meta has no subtask: it is not a WorkerOutcome record"):
        WorkerOutcome.of(restored.calls[0].meta)
