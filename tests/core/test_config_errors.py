"""Configuration mistakes under ``inspect eval``: refused at task or model creation, printed as one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai._util.error import PrerequisiteError

from mara_bench.catalog import get_benchmark
from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.datasets import MalformedRowError
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.prerequisites import as_prerequisite, one_line_errors
from mara_bench.harness.providers.local_api import open_local_model
from mara_bench.harness.providers.local_options import LocalOptions
from mara_bench.harness.task_arguments import TASK_PARAMETER_NAMES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bogus": 1}, "unknown -T option(s) bogus; task parameters: system, protocol, judge"),
        (
            {"system": "vc", "acept_after": 2},
            "unknown -T option(s) acept_after; did you mean 'accept_after'? task parameters: system,",
        ),
        (
            {"system": "vc", "accept_after": "x"},
            "system 'vc' options: accept_after: must be an integer, got 'x'; for example 4 (the default)",
        ),
        ({"system": "vc", "accept_after": 0}, "system 'vc' options: accept_after: must be >= 1, got 0"),
        (
            {"system": "mask", "max_iterations": -1},
            "system 'mask' options: max_iterations: must be >= 0, got -1",
        ),
        (
            {"system": "mars", "sys1": "maybe"},
            "system 'mars' options: sys1: must be true or false, got 'maybe'",
        ),
        (
            {"system": "mask", "prompts": "paper"},
            "system 'mask' options: prompts: 'paper' is not a valid choice; choose one of code, appendix",
        ),
        ({"system": "mars", "k": 0}, "tool settings: k: must be >= 1, got 0; use a value >= 1"),
        ({"system": "dirct"}, "unknown system 'dirct'"),
        ({"protocol": "marsrll"}, "unknown protocol 'marsrll'"),
        ({"judge": "vibes"}, "unknown judge 'vibes'"),
    ],
)
def test_a_bad_task_option_is_a_one_line_prerequisite_error_at_task_creation(options, message):
    with pytest.raises(PrerequisiteError) as caught:
        evaluation_task(get_benchmark("aime2025"), data="samples", **options)
    assert isinstance(caught.value, ValueError)  # still the ValueError code catches
    assert caught.value.message == str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(message)


def test_a_data_error_keeps_its_type_and_fields_and_becomes_one_line(tmp_path):
    bad = tmp_path / "aime.jsonl"
    bad.write_text('{"problem": "P", "answer": "1"}\n{"problem": "Q"}\n', encoding="utf-8")
    with pytest.raises(MalformedRowError) as caught:
        evaluation_task(get_benchmark("aime2025"), data=str(bad))
    assert isinstance(caught.value, PrerequisiteError)
    assert caught.value.row_number == 2 and "row 2: field 'answer'" in caught.value.message


def test_errors_of_other_libraries_keep_their_traceback():
    class Foreign(RuntimeError):
        pass

    converted = as_prerequisite(ConfigError("x: y; z"))
    assert isinstance(converted, ConfigError) and converted.message == "x: y; z"

    @one_line_errors
    def broken():
        raise Foreign("a bug")

    with pytest.raises(Foreign) as caught:
        broken()
    assert not isinstance(caught.value, PrerequisiteError)


@pytest.mark.parametrize(
    ("model_args", "message"),
    [
        ({"batchsize": 4}, "local/ -M options: batchsize: unknown key; did you mean 'batch_size'?"),
        ({"dtype": "fp16"}, "local/ -M options: dtype: 'fp16' is not a valid choice; "),
        ({"batch_wait_ms": -5}, "local/ -M options: batch_wait_ms: must be >= 0, got -5"),
        ({"max_model_len": "long"}, "local/ -M options: max_model_len: must be an integer, got 'long'"),
    ],
)
def test_a_bad_local_model_option_is_refused_before_anything_loads(model_args, message):
    with pytest.raises(PrerequisiteError) as caught:
        open_local_model("no/such/model", **model_args)  # the options are checked before the name resolves
    assert caught.value.message.startswith(message)


def test_a_gpu_list_given_as_m_device_is_kept_as_text():
    assert LocalOptions.parse({"device": [0, 1]}).device == "0,1"  # -M device=0,1 arrives as a list
    assert LocalOptions.parse({"device": 1}).device == "1"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task_args", "line"),
    [
        (
            ["-T", "system=vc", "-T", "accept_after=x"],
            "system 'vc' options: accept_after: must be an integer, got 'x'; for example 4 (the default)",
        ),
        (
            ["-T", "bogus=1"],
            f"unknown -T option(s) bogus; task parameters: {', '.join(TASK_PARAMETER_NAMES)}; "
            "system 'direct' options: system_prompt (mara tasks lists them)",
        ),
    ],
)
def test_inspect_eval_prints_a_configuration_mistake_as_one_line(tmp_path, task_args, line):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    command = [
        sys.executable,
        "-m",
        "inspect_ai",
        "eval",
        "tasks/aime.py@aime2025",
        "--model",
        "mockllm/model",
    ]
    done = subprocess.run(
        [*command, "-T", "data=samples", *task_args, "--log-dir", str(tmp_path), "--display", "plain"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    printed = [text for text in (done.stdout + done.stderr).splitlines() if text.strip()]
    assert done.returncode != 0
    assert printed == [line]
    assert not list(tmp_path.iterdir())  # no log: nothing ran
