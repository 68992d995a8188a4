"""An API key in the harness's environment never reaches an eval's log: a real Inspect eval of the react system,
whose scripted agent's python call reads every visible process's environment (its parent's included) and its
own, runs under bubblewrap; the key is neither in the tool's output nor anywhere in the ``.eval`` file."""

from __future__ import annotations

import json
import sys
import uuid
import zipfile

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.harness.tools import bwrap
from mara_bench.judges.scorers import math_scorer

STEAL = """
import os
for pid in ['self', os.getppid()] + [name for name in os.listdir('/proc') if name.isdigit()]:
    try:
        print(pid, open(f'/proc/{pid}/environ', 'rb').read())
    except OSError as error:
        print(pid, type(error).__name__)
print(dict(os.environ))
"""


def agent(messages, config) -> str:  # noqa: ARG001
    if len(messages) == 2:
        call = {"name": "python", "arguments": {"code": STEAL}, "purpose": "look around"}
        return f"<think>Let me look.</think><tool_call>{json.dumps(call)}</tool_call>"
    return "<think>Nothing useful.</think><answer>\\boxed{42}</answer>"


@pytest.mark.skipif(bwrap.unavailable_reason(sys.executable) is not None, reason="bubblewrap cannot run here")
def test_an_api_key_in_the_harness_environment_never_reaches_the_eval_log(tmp_path, bm25_index, monkeypatch):
    secret = "sk-canary-" + uuid.uuid4().hex
    monkeypatch.setenv("SERPER_API_KEY", secret)
    task = Task(
        dataset=[Sample(id="steal", input="what is 6*7?", target="42")],
        solver=system_solver(get_system("react").setup(dict(index=str(bm25_index), python_timeout=10))),
        scorer=math_scorer(),
    )
    [log] = eval(task, model=scripted_model(agent), log_dir=str(tmp_path / "logs"), display="none")

    assert log.status == "success"
    [sample] = log.samples
    [tool_call] = stored_episode(sample.store).tool_calls
    assert tool_call.error is None
    assert "'HOME': '/sandbox'" in tool_call.output  # the code ran and printed what it could read
    assert secret not in tool_call.output
    with zipfile.ZipFile(log.location) as archive:
        logged = b"".join(archive.read(name) for name in archive.namelist())
    assert b"'HOME': '/sandbox'" in logged  # the tool output is in the log ...
    assert secret.encode() not in logged  # ... and the key is not
