"""The tasks as an Inspect package: every benchmark is declared in a task file and is ``mara_bench/<task>`` with
typed parameters and a docstring generated from its declaration; ``tasks/*.py`` are those same files; user paths
resolve against the directory the command ran in, and a ``local/`` run records the checkpoint it resolved to."""

from __future__ import annotations

import ast
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.util import registry_info

from mara_bench import aime
from mara_bench.catalog import BENCHMARKS, TASK_FILES
from mara_bench.harness import invocation
from mara_bench.harness.datasets import MissingDataError, get_benchmark, load_benchmark
from mara_bench.harness.datasets.loader import bundled_samples_path
from mara_bench.harness.datasets.specs import BenchmarkSpec, register_benchmark
from mara_bench.harness.task_arguments import TASK_PARAMETER_NAMES
from mara_bench.harness.task_builder import benchmark as declare_task

ROOT = Path(__file__).resolve().parents[2]
TYPED = {
    "system": "str",
    "protocol": "str | None",
    "judge": "str | None",
    "data": "str | None",
    "ids": "str | int | list[str | int] | None",
    "limit": "int | None",
    "epochs": "int | None",
    "reducers": "str | list[str] | None",
}


def _registered() -> dict[str, object]:
    return {
        registry_info(value).name: value
        for module in TASK_FILES
        for value in vars(module).values()
        if callable(value) and hasattr(value, "__registry_info__")
    }


def test_every_benchmark_is_a_registered_mara_bench_task():
    assert set(_registered()) == {f"mara_bench/{name}" for name in BENCHMARKS}


def test_tasks_declare_typed_parameters_and_pass_system_options_through():
    for name, task_function in _registered().items():
        parameters = inspect.signature(task_function).parameters
        assert {key: str(parameters[key].annotation) for key in TYPED} == TYPED, name
        assert registry_info(task_function).metadata["params"][: len(TYPED)] == list(TYPED)
        assert list(parameters.values())[-1].kind is inspect.Parameter.VAR_KEYWORD


def test_each_tasks_generated_docstring_states_its_declared_dataset_judge_and_protocol():
    for name, task_function in _registered().items():
        spec = get_benchmark(name.removeprefix("mara_bench/"))
        doc = task_function.__doc__ or ""
        assert doc.startswith(spec.title), name
        if spec.bundled:
            bundled_file = f"harness/datasets/samples/{spec.name}.jsonl"
            assert f"Dataset: bundled with mara-bench ({bundled_file})" in doc, name
        else:
            assert f"Dataset: {spec.hf_path} (" in doc and f"{spec.split})" in doc, name
            assert (spec.revision or "not pinned") in doc, name
        assert f"Row formats: {', '.join(f.name for f in spec.row_formats)}" in doc, name
        assert f"Judge: {spec.judge} · protocol: {spec.protocol}" in doc, name
        if spec.instruction is not None:
            assert f"instruction: {spec.instruction}" in doc, name
        listed = [
            line.split(":")[0].strip() for line in doc.split("Parameters (-T name=value")[1].splitlines()[1:]
        ]
        assert listed == list(TASK_PARAMETER_NAMES), name


def test_every_benchmark_the_harness_knows_is_declared_in_a_task_file_beside_its_task():
    declared = {
        value.name: (module, value)
        for module in TASK_FILES
        for value in vars(module).values()
        if isinstance(value, BenchmarkSpec)
    }
    assert set(BENCHMARKS) == set(declared)
    for name, (module, spec) in declared.items():
        assert BENCHMARKS[name] is spec and get_benchmark(name) is spec
        assert registry_info(getattr(module, name)).name == f"mara_bench/{name}"


def test_a_task_named_unlike_its_declaration_is_refused():
    def aime2026() -> None: ...

    with pytest.raises(ValueError, match="task 'aime2026' declares benchmark 'aime2025': name them alike"):
        declare_task(aime.AIME2025)(aime2026)


def test_a_benchmark_declared_in_a_second_file_is_refused_naming_both():
    with pytest.raises(
        ValueError, match=r"benchmark 'aime2025' is declared twice: in .*aime\.py and in .*other\.py"
    ):
        register_benchmark(aime.AIME2025, declared_in="other.py")
    assert register_benchmark(aime.AIME2025, declared_in=aime.__file__) is aime.AIME2025


def test_the_catalog_imports_every_task_file():
    files = {path.stem for path in (ROOT / "tasks").glob("*.py")} - {"__init__", "catalog"}
    assert {module.__name__.removeprefix("mara_bench.") for module in TASK_FILES} == files


def test_the_task_files_are_the_package_files():
    for module in TASK_FILES:
        assert Path(module.__file__).resolve() == (ROOT / "tasks" / Path(module.__file__).name).resolve()
    file_tasks = {
        node.name
        for file in (ROOT / "tasks").glob("*.py")
        for node in ast.parse(file.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef)
        and any(getattr(d, "id", None) == "task" for d in node.decorator_list)
    }
    assert file_tasks == set(BENCHMARKS)


def test_relative_data_and_ids_come_from_the_directory_the_command_ran_in(tmp_path, monkeypatch):
    shutil.copy(bundled_samples_path("bamboogle"), tmp_path / "mine.jsonl")
    (tmp_path / "ids.txt").write_text("test_1\ntest_0\n")
    monkeypatch.setattr(invocation, "INVOCATION_DIR", tmp_path)
    monkeypatch.chdir(ROOT / "tasks")  # as Inspect does before it calls a task file's function
    loaded = load_benchmark("bamboogle", data="mine.jsonl", ids="ids.txt")
    assert loaded.provenance["path"] == str(tmp_path / "mine.jsonl")
    assert [sample.id for sample in loaded.dataset] == ["test_1", "test_0"]
    monkeypatch.chdir(tmp_path.parent)  # anywhere else (mara, the Python API) the current directory counts
    assert load_benchmark("bamboogle", data=f"{tmp_path.name}/mine.jsonl").provenance["path"] == str(
        tmp_path / "mine.jsonl"
    )


def test_a_mara_data_dir_that_is_not_a_folder_is_an_error_not_a_fallback(tmp_path, monkeypatch):
    monkeypatch.setattr(invocation, "INVOCATION_DIR", tmp_path)
    monkeypatch.chdir(ROOT / "tasks")  # inside Inspect's chdir, the directory the command ran in still counts
    monkeypatch.setenv("MARA_DATA_DIR", "shared/data")
    with pytest.raises(
        MissingDataError, match=rf"MARA_DATA_DIR=shared/data is not a folder \(looked for {tmp_path}"
    ):
        load_benchmark("bamboogle")


@pytest.mark.slow
def test_inspect_eval_from_another_directory_reads_its_paths_and_records_the_checkpoint(tmp_path):
    """A real ``inspect eval`` of a registered task and of a task file, run from a directory of the user's: a
    relative ``MARA_DATA_DIR``, ``./checkpoints.yaml`` and the run directory it names are read from there, and
    the log records the data file and the checkpoint (run step and weights hash) that ran."""
    from mara_bench.harness.tinymodel import build_tiny_model

    build_tiny_model(tmp_path / "run" / "exports" / "step_2", arch="qwen2", seed=0)
    for benchmark, relative in (
        ("aime2025", "aime2025/aime2025_test.jsonl"),
        ("bamboogle", "bamboogle/bamboogle_test.jsonl"),
    ):
        (tmp_path / "data" / relative).parent.mkdir(parents=True)
        shutil.copy(bundled_samples_path(benchmark), tmp_path / "data" / relative)
    (tmp_path / "checkpoints.yaml").write_text("mine:\n  path: run\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MARA_DATA_DIR": "data",
        "HF_HUB_OFFLINE": "1",
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
    }
    inspect_cli = Path(sys.executable).with_name("inspect")
    command = [str(inspect_cli), "eval", "mara_bench/aime2025", str(ROOT / "tasks" / "qa.py") + "@bamboogle"]
    command += ["--model", "local/mine", "-T", "limit=1", "-T", "protocol=quick", "--display", "plain"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    logs = [read_eval_log(info.name, header_only=True) for info in list_eval_logs(str(tmp_path / "logs"))]
    registry_names = {log.eval.task: log.eval.task_registry_name for log in logs}
    assert registry_names == {"aime2025": "mara_bench/aime2025", "bamboogle": "bamboogle"}
    for log in logs:
        assert log.status == "success"
        benchmark = log.eval.metadata["dataset"]["benchmark"]
        assert log.eval.metadata["dataset"]["path"] == str(
            tmp_path / "data" / get_benchmark(benchmark).local_files[0]
        )
        record = log.eval.metadata["resolved_checkpoint"]
        assert (record["name"], record["source"], record["path"], record["step"]) == (
            "mine",
            "registry:mine",
            str(tmp_path / "run" / "exports" / "step_2"),
            2,
        )
        assert len(record["weights_sha256"]) == 64
