"""The package's import graph, read from the source (every ``import``, at any depth, type-only ones included), and
the layering contract it is held to; ``tests/core/test_layers.py`` checks it, and running this file prints the
measures (``.venv/bin/python tests/core/import_graph.py``).

A contract is a list of floors, the top one first; a floor is one or more parts, each a folder or a file of the
checkout. A file may import the floors below its own and nothing above; parts of one floor do not import each
other. A file belongs to the longest part that holds it, in each contract that names one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "mara_bench"
FOLDERS = {"tasks": PACKAGE, "core": f"{PACKAGE}.core", "judges": f"{PACKAGE}.judges"}
FOLDERS |= {name: f"{PACKAGE}.{name}" for name in ("harness", "trainer", "leaderboards")}
"""Checkout folder -> the package it is (pyproject's ``package-dir``)."""

Floor = tuple[str, ...]
CONTRACTS: dict[str, tuple[Floor, ...]] = {
    "packages": (
        ("harness/cli.py", "harness/_registry.py"),
        ("trainer/", "leaderboards/"),
        ("tasks/",),
        ("harness/",),
        ("judges/",),
        ("core/",),
    ),
    "trainer": (
        ("trainer/run/",),
        ("trainer/rollouts/",),
        ("trainer/learner/",),
        ("trainer/methods/",),
        ("trainer/demos/",),
        ("trainer/tasks/",),
        ("trainer/algorithms/",),
        ("trainer/",),  # its shared floor: the recipe's typed config, the registry, samples, step records
    ),
    "harness": (
        ("harness/cli.py", "harness/_registry.py"),
        ("harness/demo.py", "harness/task_listing.py"),
        ("harness/task_builder.py",),
        ("harness/evaluation.py",),
        ("harness/task_arguments.py",),
        ("harness/providers/",),
        ("harness/prerequisites.py",),
        ("harness/task_spec_errors.py", "harness/accounting_scorer.py"),
        ("harness/systems/",),
        ("harness/accounting.py",),
        ("harness/tools/",),
        ("harness/toolcache/",),
        ("harness/toolbase/",),
        ("harness/datasets/", "harness/audit.py", "harness/checkpoints.py"),
        (
            "harness/",
        ),  # its shared floor: prompts, protocols, retrieval, redaction, invocation, chat template ...
    ),
}
"""The layering, top floor first (see the module docstring)."""

NOT_YET: dict[tuple[str, str], str] = {}
"""Imports against the contract that are known and not yet mended, (importer, imported): why each is there. The
contract test fails on any other, and on an entry here that no longer exists."""


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (checkout paths), on ``line`` of ``source``."""

    source: str
    target: str
    line: int


def module_files() -> dict[str, str]:
    """Module name -> checkout path, for every module of the package."""
    found = {}
    for folder, package in FOLDERS.items():
        for file in sorted((ROOT / folder).rglob("*.py")):
            parts = file.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = file.relative_to(ROOT).as_posix()
    return found


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, int]]:
    """Every name ``tree`` imports (``a.b`` and, for ``from a.b import c``, also ``a.b.c``), absolute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, node.lineno
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


@cache
def edges() -> tuple[Edge, ...]:
    """Every import from one of the package's files to another (one per file pair, at its first line)."""
    files = module_files()
    found: dict[tuple[str, str], Edge] = {}
    for module, path in files.items():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        for name, line in _imported_names(tree, module, path.endswith("__init__.py")):
            target = files.get(name)
            if target is not None and target != path and (path, target) not in found:
                found[(path, target)] = Edge(path, target, line)
    return tuple(sorted(found.values(), key=lambda edge: (edge.source, edge.target)))


def _place(path: str, floors: tuple[Floor, ...]) -> tuple[int, str] | None:
    """(floor index, part) of the longest part holding ``path``, or None when the contract names none."""
    holding = [
        (len(part), index, part)
        for index, floor in enumerate(floors)
        for part in floor
        if path == part or (part.endswith("/") and path.startswith(part))
    ]
    if not holding:
        return None
    _, index, part = max(holding)
    return index, part


def broken(contracts: dict[str, tuple[Floor, ...]] = CONTRACTS) -> dict[tuple[str, str], str]:
    """Every import that runs up a floor, or across parts of one floor, in any contract: (importer, imported) ->
    one line saying where and how."""
    found, every_edge = {}, edges()
    for name, floors in contracts.items():
        for edge in every_edge:
            source, target = _place(edge.source, floors), _place(edge.target, floors)
            if source is None or target is None or source[1] == target[1] or target[0] > source[0]:
                continue
            where = "a floor above it" if target[0] < source[0] else "beside it on its floor"
            found[(edge.source, edge.target)] = (
                f"{name}: {edge.source}:{edge.line} imports {edge.target}, {where}"
            )
    return found


def circles() -> list[list[str]]:
    """The files that import each other in a loop (strongly connected components of two files or more)."""
    graph: dict[str, list[str]] = {}
    for edge in edges():
        graph.setdefault(edge.source, []).append(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, []):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


if __name__ == "__main__":
    found_edges, found_broken, found_circles = edges(), broken(), circles()
    print(f"{len(module_files())} files, {len(found_edges)} imports between them")
    print(f"imports against the contract: {len(found_broken)} ({len(NOT_YET)} known, in NOT_YET)")
    for line in found_broken.values():
        print(f"  {line}")
    print(f"import circles: {len(found_circles)}")
    for circle in found_circles:
        print(f"  {' <-> '.join(circle)}")
