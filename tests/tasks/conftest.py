"""Fixtures for the task tests: load a task function from its file under tasks/ (task files are not a package)."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"


@cache
def task_module(file_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"mara_tasks_{Path(file_name).stem}", TASKS_DIR / file_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def grader_bound():
    """Bind a scripted grader for task creation outside ``eval`` (LLM judges check for a grader there)."""
    from inspect_ai.model._model import init_model_roles, model_roles

    from mara_bench.harness.testing import scripted_model

    previous = model_roles()
    init_model_roles({**previous, "grader": scripted_model(["yes"])})
    yield
    init_model_roles(previous)


@pytest.fixture
def load_task():
    """``load_task("aime.py", "aime2025", **task_args)`` → the Task that file's @task builds."""

    def build(file_name: str, task_name: str, **task_args):
        return getattr(task_module(file_name), task_name)(**task_args)

    return build
