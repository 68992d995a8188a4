"""The import contract (``tests/core/import_graph.py``, documented in docs/development.md): imports only go down the
floors, between the packages (core <- judges <- harness <- tasks <- trainer | leaderboards <- the commands) and
between trainer's and harness's subpackages."""

from __future__ import annotations

from import_graph import CONTRACTS, NOT_YET, Edge, broken, circles, edges, module_files


def test_no_import_runs_up_a_floor_or_across_one():
    found = broken()
    new = {pair: line for pair, line in found.items() if pair not in NOT_YET}
    assert new == {}, "imports against the layering:\n" + "\n".join(new.values())


def test_every_known_exception_still_exists():
    """A mended import leaves ``NOT_YET``, so the contract holds it from then on."""
    assert sorted(set(NOT_YET) - set(broken())) == []


def test_the_core_imports_nothing_of_mara_bench():
    assert [edge for edge in edges() if edge.source.startswith("core/")] == []


def test_every_file_of_the_package_stands_on_a_floor_of_the_package_contract():
    floors = CONTRACTS["packages"]
    parts = [part for floor in floors for part in floor]
    for path in module_files().values():
        assert any(path == part or (part.endswith("/") and path.startswith(part)) for part in parts), path


def test_the_contract_catches_an_upward_import(monkeypatch):
    """A planted import of the trainer's engine from a judge is reported, on both contracts it crosses."""
    planted = Edge("judges/math.py", "trainer/run/engine.py", 1)
    monkeypatch.setattr("import_graph.edges", lambda: [*edges(), planted])
    assert ("judges/math.py", "trainer/run/engine.py") in broken()
    planted_inside = Edge("trainer/algorithms/losses.py", "trainer/learner/update.py", 1)
    monkeypatch.setattr("import_graph.edges", lambda: [*edges(), planted_inside])
    assert "a floor above it" in broken()[("trainer/algorithms/losses.py", "trainer/learner/update.py")]


def test_no_files_import_each_other_in_a_loop():
    assert circles() == []
