"""Accounting over epochs: a real ``inspect eval --epochs 2 --epochs-reducer max`` run (CLI subprocess, the real
``aime2025`` task and ``direct`` system) on a scripted provider (the task's own model: ``--model`` is resolved before a task file is read) whose replies differ in length per call. What each
attempt cost is counted once per attempt (question x epoch): the per-attempt mean and the totals over the eval, never
the epoch reducer's max, which is for correctness scores."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log

ROOT = Path(__file__).resolve().parents[2]
REPLY_TOKENS = (10, 20, 30, 40)
"""Output tokens of the 1st..4th call (``mara_bench.harness.testing.scripted_output`` counts len(text) // 4)."""

TASK_FILE = '''
"""The real aime2025 task, evaluated by a provider whose n-th reply is REPLY_TOKENS[n] tokens long."""
from itertools import count

from inspect_ai import task, task_with
from inspect_ai.model import GenerateConfig, ModelAPI, get_model, modelapi

from mara_bench.harness.testing import scripted_output
from tasks.aime import aime2025

REPLY_TOKENS = {tokens!r}


class GrowingReplies(ModelAPI):
    def __init__(self, model_name, base_url=None, api_key=None, config=GenerateConfig(), **model_args):
        super().__init__(model_name, base_url, api_key, [], config)
        self.calls = count()

    async def generate(self, input, tools, tool_choice, config):
        tokens = REPLY_TOKENS[next(self.calls)]
        return scripted_output("\\\\boxed{{70}}".ljust(4 * tokens, "."), model=self.model_name)


@modelapi(name="growing")
def growing():
    return GrowingReplies


@task
def aime_scripted():
    return task_with(aime2025(data={data!r}, system="direct"), model=get_model("growing/x"))
'''


@pytest.mark.slow
def test_epochs_sum_what_each_attempt_cost_instead_of_reducing_it(tmp_path):
    data = tmp_path / "aime.jsonl"
    data.write_text(
        "".join(json.dumps({"problem": f"Problem {i}.", "answer": "70"}) + "\n" for i in range(2))
    )
    task_file = tmp_path / "scripted.py"
    task_file.write_text(TASK_FILE.format(tokens=REPLY_TOKENS, data=str(data)))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
    }
    command = [str(Path(sys.executable).with_name("inspect")), "eval", "scripted.py@aime_scripted"]
    command += ["--epochs", "2", "--epochs-reducer", "max", "--display", "plain"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (info,) = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info.name)
    assert log.status == "success" and len(log.samples) == 4
    (accounting,) = [score for score in log.results.scores if score.name == "accounting"]
    metrics = {name: metric.value for name, metric in accounting.metrics.items()}
    assert metrics["attempts"] == 4
    assert metrics["total_output_tokens"] == sum(REPLY_TOKENS)
    assert metrics["output_tokens"] == sum(REPLY_TOKENS) / 4  # per attempt; max per question would exceed it
    assert metrics["total_input_tokens"] == 4 and metrics["input_tokens"] == 1
    per_sample = sorted(sample.scores["accounting"].value["output_tokens"] for sample in log.samples)
    assert per_sample == list(REPLY_TOKENS)
    reduced = {score.name: score.reducer for score in log.results.scores if score.reducer}
    assert reduced == {"math": "max"}  # the correctness score is still reduced as asked, the cost never
