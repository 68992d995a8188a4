"""Grader calls through real evals: a reply that gave no verdict is never cached (a recovered grader is asked
again), and a grader that hangs is abandoned after the judge's timeout, leaving that sample unscored."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import anyio
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, get_model, modelapi
from inspect_ai.solver import generate
from inspect_ai.tool import ToolChoice, ToolInfo

from mara_bench.harness.testing import scripted_model, scripted_output
from mara_bench.judges.registry import get_judge
from mara_bench.judges.reply_cache import expiry_seconds

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = [Sample(id=f"s{i}", input=f"question {i}", target=str(i)) for i in range(6)]
SLEEPY_MARK = "answer 3"  # the grader hangs whenever the judged response is this one


def _hle_reply(correct: str = "yes") -> str:
    return json.dumps({"extracted_final_answer": "x", "reasoning": "r", "correct": correct, "confidence": 90})


class CountingGrader:
    """Scripted grader: garbage for the responses in ``garbage_for``, a "yes" verdict otherwise; counts calls."""

    def __init__(self, garbage_for: set[str]):
        self.garbage_for, self.calls = garbage_for, []

    def __call__(self, messages, config):
        prompt = messages[-1].text
        self.calls.append(prompt)
        return "the grader is overloaded" if any(r in prompt for r in self.garbage_for) else _hle_reply()


def _answers(messages, config):
    return "answer " + messages[-1].text.split()[-1]


def _eval_hle(grader, tmp_path: Path, **judge_options):
    task = Task(dataset=SAMPLES, solver=generate(), scorer=get_judge("hle", **judge_options))
    (log,) = eval(
        task,
        model=scripted_model(_answers),
        model_roles={"grader": grader},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success"
    return log


def _unscored(log) -> set[str]:
    return {s.id for s in log.samples if math.isnan(s.scores["hle"].value["judged_correct"])}


def test_failed_judgements_are_not_cached_so_a_recovered_grader_is_asked_again(tmp_path):
    outage = CountingGrader(garbage_for={"answer 1", "answer 4"})
    log = _eval_hle(scripted_model(outage, name="mockllm/grader"), tmp_path)
    assert _unscored(log) == {"s1", "s4"}
    assert len(outage.calls) == 4 + 2 * 3  # one call per good sample, three attempts per failing one

    recovered = CountingGrader(garbage_for=set())
    log = _eval_hle(scripted_model(recovered, name="mockllm/grader"), tmp_path)
    assert _unscored(log) == set()
    # exactly the two that failed are asked again: the four verdicts are replayed from the cache
    assert sorted(re.search(r"answer \d", prompt).group(0) for prompt in recovered.calls) == [
        "answer 1",
        "answer 4",
    ]

    again = CountingGrader(garbage_for=set())
    _eval_hle(scripted_model(again, name="mockllm/grader"), tmp_path)
    assert again.calls == []


def test_cache_off_asks_every_time_and_expiry_strings_are_checked(tmp_path):
    grader = CountingGrader(garbage_for=set())
    for _ in range(2):
        _eval_hle(scripted_model(grader, name="mockllm/grader"), tmp_path, cache=False)
    assert len(grader.calls) == 12
    assert expiry_seconds("1W") == 7 * 86400 and expiry_seconds(None) is None
    with pytest.raises(ValueError, match="cache expiry 'soon'"):
        expiry_seconds("soon")


class SleepyGrader(ModelAPI):
    """A grader that never answers when the judged response is ``SLEEPY_MARK`` (sleeps an hour), else says yes."""

    def __init__(
        self, model_name: str, base_url=None, api_key=None, config: GenerateConfig = GenerateConfig()
    ):
        super().__init__(model_name, base_url, api_key, [], config)

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        if SLEEPY_MARK in input[-1].text:
            await anyio.sleep(3600)
        return scripted_output(_hle_reply(), model=self.model_name)


@modelapi(name="sleepygrader")
def sleepygrader():
    return SleepyGrader


def test_a_hanging_grader_times_out_the_judgement_and_the_eval_finishes(tmp_path):
    log = _eval_hle(get_model("sleepygrader/judge"), tmp_path, timeout=0.3, attempts=2)
    assert _unscored(log) == {"s3"}
    score = next(s for s in log.samples if s.id == "s3").scores["hle"]
    assert score.reason == "grader_failed"
    assert score.metadata["grader_failure"] == "grader call timed out after 0.3 s (attempt 2 of 2)"


def test_judge_timeout_task_option_reaches_the_grader_through_a_real_task(tmp_path):
    (log,) = eval(
        f"{ROOT / 'tasks' / 'qa.py'}@bamboogle",
        task_args={"data": "samples", "judge": "equivalence", "judge_timeout": 0.3},
        model=scripted_model(lambda messages, config: SLEEPY_MARK),
        model_roles={"grader": get_model("sleepygrader/judge")},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and log.eval.metadata["judge_options"] == {"timeout": 0.3}
    assert {s.scores["equivalence"].reason for s in log.samples} == {"grader_failed"}
    metrics = {name: m.value for score in log.results.scores for name, m in score.metrics.items()}
    assert metrics["unscored"] == 5


@pytest.mark.parametrize(("options", "message"), [({"timeout": 0}, "timeout"), ({"attempts": 0}, "attempts")])
def test_bad_bounds_are_refused_when_the_judge_is_built(options, message):
    with pytest.raises(ValueError, match=f"judge {message} must be"):
        get_judge("hle", **options)
