"""Hostile web answers in a real Inspect eval: the react system on a scripted mock model browses a twice-gzipped
bomb, a drip-fed page and a page too slow to read, served on 127.0.0.1. Each comes back to the agent (and the
log) as a tool error naming the setting that stopped it, the agent answers, and the eval finishes."""

from __future__ import annotations

import gzip
import json

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.judges.scorers import math_scorer

# sample id -> (path the agent browses, the tool error's start, a later part of it)
CASES = {
    "bomb": ("/bomb", "browse: ", "is over the limit of 1,000,000 bytes (browse_max_bytes)"),
    "drip": ("/drip", "browse: no complete answer from ", "within the deadline of 2 s (web_deadline)"),
    "slow": ("/slow", "browse: reading ", "took over 0.001 s (browse_extract_seconds)"),
}


def agent(base_url: str):
    def reply(messages, config) -> str:  # noqa: ARG001
        case = messages[1].text.split(":")[0]
        if len(messages) == 2:
            call = {"name": "browse", "arguments": {"url": base_url + CASES[case][0]}, "purpose": "read"}
            return f"<think>Let me read it.</think><tool_call>{json.dumps(call)}</tool_call>"
        return "<think>The page failed; I know it anyway.</think><answer>\\boxed{42}</answer>"

    return reply


def test_hostile_pages_are_tool_errors_and_the_eval_finishes(web, tmp_path):
    bomb = gzip.compress(gzip.compress(bytes(200_000_000), 9), 9)
    web.route(
        "/bomb", web.reply(body=bomb, content_type="text/html", headers={"Content-Encoding": "gzip, gzip"})
    )
    web.route("/drip", web.reply(body="x" * 100, content_type="text/plain", drip=0.1))
    web.route("/slow", web.reply(body="<p>Everest</p>" * 1000, content_type="text/html"))
    task = Task(
        dataset=[Sample(id=case, input=f"{case}: what is 6*7?", target="42") for case in CASES],
        solver=system_solver(
            get_system("react").setup(
                dict(
                    tools="browse",
                    browse_allow_private=True,  # the hostile server is on 127.0.0.1
                    browse_max_bytes=1_000_000,
                    web_deadline=2,
                    http_attempts=1,
                    browse_extract_seconds=0.001,
                )
            )
        ),
        scorer=math_scorer(),
    )
    [log] = eval(task, model=scripted_model(agent(web.url)), log_dir=str(tmp_path / "logs"), display="none")

    assert log.status == "success"
    for sample in log.samples:
        assert sample.error is None and sample.scores["math"].value["correct"] == 1.0
        [tool_call] = stored_episode(sample.store).tool_calls
        _, start, detail = CASES[sample.id]
        assert tool_call.name == "browse" and tool_call.error.startswith(start) and detail in tool_call.error
