"""A task ``inspect eval`` cannot find is one line naming the closest valid one (``mara_bench.harness.task_spec_errors``)."""

from __future__ import annotations

from pathlib import Path

from mara_bench.core.inspect_compat import PrerequisiteError
from mara_bench.harness.task_spec_errors import explain, spec_problem, task_specs

ROOT = Path(__file__).resolve().parents[2]


def test_the_task_specs_are_the_arguments_before_the_first_option():
    assert task_specs(["inspect", "eval", "a.py", "mara_bench/hle", "--model", "local/x"]) == [
        "a.py",
        "mara_bench/hle",
    ]
    assert task_specs(["inspect", "score", "log.eval"]) == []


def test_each_kind_of_wrong_spec_names_the_closest_valid_one():
    assert "did you mean 'aime2025'?" in spec_problem("mara_bench/aime2026")
    assert "did you mean 'aime2025'?" in spec_problem(f"{ROOT}/tasks/aime.py@aime2026")
    missing = spec_problem(f"{ROOT}/tasks/aim.py")
    assert missing.startswith(f"{ROOT}/tasks/aim.py: no such task file") and "tasks/aime.py'?" in missing
    assert spec_problem("mara_bench/aime2025") is None
    assert spec_problem(f"{ROOT}/tasks/aime.py@aime2025") is None


def test_only_inspects_task_errors_are_explained():
    argv = ["inspect", "eval", "mara_bench/aime2026", "--model", "local/x"]
    not_found = PrerequisiteError("Error: No inspect tasks were found at the specified paths.")
    assert explain(not_found, argv).startswith("mara_bench/aime2026: no such mara-bench task")
    assert explain(ValueError("something else"), argv) is None
    assert explain(not_found, ["inspect", "score", "x.eval"]) is None
