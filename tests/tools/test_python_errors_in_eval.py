"""A failing python call does not stop an eval: an Inspect eval of the react system on a scripted mock model
whose python calls loop forever, blow the memory limit, open a socket or write outside their directory (under
``python_sandbox=unisolated``, whose guard refuses the last two; bubblewrap's eval is in
``test_python_isolation_in_eval``). Each failure goes back to the agent as a tool error, the agent answers, and
every sample is scored by the math judge."""

from __future__ import annotations

import json

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.judges.scorers import math_scorer

# sample id -> (code the agent runs, first line of the tool error it must read, a later part of that error,
#               the answer it then gives)
CASES = {
    "loop": (
        "while True:\n    pass",
        "python: stopped after the 3 s time limit (python_timeout); output so far:",
        "\n(none)",
        "42",
    ),
    "memory": (
        "blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))",
        "python: exceeded the memory limit of 256 MiB (python_memory_mb)",
        "\nMemoryError",
        "42",
    ),
    "socket": (
        "import socket\nsocket.create_connection(('127.0.0.1', 9))",
        "python: the code raised an error (exit status 1)",
        "\nPermissionError: python sandbox: network access is disabled",
        "42",
    ),
    "write": (
        "open({escape!r}, 'w').write('leak')",
        "python: the code raised an error (exit status 1)",
        "\nPermissionError: python sandbox: writing outside the working directory is not allowed: ",
        "41",  # a wrong answer: the judge really compares
    ),
}


def agent(escape: str):
    """The scripted agent: first a python call for its case, then an answer once it has seen the tool result."""

    def reply(messages, config) -> str:  # noqa: ARG001
        case = messages[1].text.split(":")[0]
        code, _, _, answer = CASES[case]
        if len(messages) == 2:
            call = {"name": "python", "arguments": {"code": code.format(escape=escape)}, "purpose": "compute"}
            return f"<think>Let me compute.</think><tool_call>{json.dumps(call)}</tool_call>"
        return f"<think>The tool failed; I know it anyway.</think><answer>\\boxed{{{answer}}}</answer>"

    return reply


def test_failed_python_calls_come_back_as_tool_errors_and_every_sample_is_scored(tmp_path, bm25_index):
    escape = tmp_path / "escape.txt"
    task = Task(
        dataset=[Sample(id=case, input=f"{case}: what is 6*7?", target="42") for case in CASES],
        solver=system_solver(
            get_system("react").setup(
                dict(
                    index=str(bm25_index), python_timeout=3, python_memory_mb=256, python_sandbox="unisolated"
                )
            )
        ),
        scorer=math_scorer(),
    )
    [log] = eval(
        task,
        model=scripted_model(agent(str(escape))),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=4,
    )

    assert log.status == "success"
    assert not escape.exists()
    assert log.results.scores[0].metrics["accuracy"].value == 0.75
    by_id = {sample.id: sample for sample in log.samples}
    assert sorted(by_id) == sorted(CASES)
    for case, (_, error_start, error_detail, answer) in CASES.items():
        sample = by_id[case]
        assert sample.error is None
        assert sample.scores["math"].value["correct"] == (1.0 if answer == "42" else 0.0)
        assert sample.scores["math"].answer == answer
        episode = stored_episode(sample.store)
        [tool_call] = episode.tool_calls
        assert (tool_call.name, tool_call.output, tool_call.turn) == ("python", "", 0)
        assert tool_call.error.startswith(error_start + "\n")
        assert error_detail in tool_call.error
        assert [(call.role, call.parent, call.turn) for call in episode.calls] == [
            ("agent", None, 0),
            ("agent", 0, 1),
        ]
        handed_back = episode.calls[1].messages[-1]["content"]
        assert handed_back.startswith(f"<tool_response>\nTool error (python): {error_start}")
        assert episode.final_answer == f"\\boxed{{{answer}}}"
