"""Layers point one way and Inspect's private names stay in one module, under a version bound that holds."""

from __future__ import annotations

import ast
import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "harness", "judges", "trainer", "leaderboards", "tasks")
COMPAT = ROOT / "core" / "inspect_compat.py"


def _imports(path: Path) -> list[str]:
    """Every module name ``path`` imports, at any depth (``from x import y`` gives ``x``)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _package_files() -> list[Path]:
    return [file for package in PACKAGES for file in sorted((ROOT / package).rglob("*.py"))]


def test_private_inspect_names_are_imported_only_by_the_compat_module():
    private = {
        str(file.relative_to(ROOT)): name
        for file in _package_files()
        for name in _imports(file)
        if name.startswith("inspect_ai") and any(part.startswith("_") for part in name.split("."))
    }
    assert set(private) == {str(COMPAT.relative_to(ROOT))}, private


def test_the_trainer_reaches_no_inspect_provider_module():
    providers = {
        f"mara_bench.harness.providers.{name}" for name in ("local_api", "transformers_api", "vllm_api")
    }
    for file in sorted((ROOT / "trainer").rglob("*.py")):
        assert not providers & set(_imports(file)), file


def test_installed_inspect_ai_is_inside_the_pyproject_bound():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirement = next(
        Requirement(line) for line in project["dependencies"] if Requirement(line).name == "inspect-ai"
    )
    assert any(spec.operator == "<" for spec in requirement.specifier), "inspect-ai needs an upper bound"
    assert requirement.specifier.contains(importlib.metadata.version("inspect-ai"))
