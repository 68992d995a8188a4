"""The Inspect adapter: systems run as solvers, roles map to models, the Episode and answers land on the sample."""

from __future__ import annotations

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model


def _task() -> Task:
    samples = [Sample(id=i, input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(1, 4)]
    return Task(dataset=samples, solver=system_solver(get_system("direct").setup({})), scorer=includes())


def _double(messages, config) -> str:
    question = messages[-1].text
    number = int(question.split()[2])
    return f"The answer is {2 * number}."


def test_direct_system_stores_episode_and_answer(tmp_path):
    log = eval(_task(), model=scripted_model(_double), log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success"
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    sample = log.samples[0]
    episode = stored_episode(sample.store)
    assert [call.role for call in episode.calls] == ["solver"]
    assert episode.calls[0].messages == [{"role": "user", "content": "What is 1 + 1?"}]
    assert episode.final_answer == sample.output.completion == "The answer is 2."
    # the final answer is stored once, in the Episode; beside it, the settings each role's calls were sent with
    assert set(sample.store) == {"episode", "generation_by_role"}
    assert sample.store["generation_by_role"] == {"solver": [{}]}  # nothing set: the model's own defaults
    # the conversation ends with the output's own message (same id), as generate() leaves it
    assert sample.messages[-1] == sample.output.message


def test_role_binding_overrides_evaluated_model(tmp_path):
    evaluated = scripted_model(lambda m, c: "wrong", name="mockllm/evaluated")
    bound = scripted_model(_double, name="mockllm/solver")
    log = eval(
        _task(), model=evaluated, model_roles={"solver": bound}, log_dir=str(tmp_path), display="none"
    )[0]
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    assert "solver" in log.stats.role_usage


def test_protocol_sampling_reaches_role_models(tmp_path):
    seen = []

    def record(messages, config):
        seen.append(config.temperature)
        return "0"

    task = _task()
    task.config.temperature = 0.6
    eval(
        task,
        model=scripted_model(lambda m, c: "0"),
        model_roles={"solver": scripted_model(record)},
        log_dir=str(tmp_path),
        display="none",
    )
    assert seen == [0.6, 0.6, 0.6]


def test_unknown_system_and_option_are_clear_errors():
    with pytest.raises(ValueError, match="unknown system .*; valid: .*direct"):
        get_system("nope")
    with pytest.raises(
        ValueError, match=r"unknown option\(s\) bogus; system 'direct' options: system_prompt"
    ):
        system_solver(get_system("direct").setup(dict(bogus=1)))


def test_multi_agent_calls_get_one_transcript_span_per_role_single_agent_none(tmp_path):
    def reply(messages, config):
        prompt = " ".join(message.text for message in messages)
        return "Correctness: Correct" if "Correctness" in prompt else "\\boxed{2}"

    def span_names(solver):
        task = Task(dataset=[Sample(id=1, input="1+1?", target="2")], solver=solver, scorer=includes())
        (log,) = eval(task, model=scripted_model(reply), log_dir=str(tmp_path), display="none")
        return [e.name for e in log.samples[0].events if e.event == "span_begin" and e.type == "agent"]

    assert span_names(system_solver(get_system("vc").setup(dict(accept_after=1)))) == ["solver", "verifier"]
    assert span_names(system_solver(get_system("direct").setup({}))) == []


def test_a_task_hands_the_solver_its_set_up_system_and_the_log_names_it(tmp_path):
    """The evaluation hands the Inspect solver the system it looked up, set up with its options; the log's plan
    still reads the system's name, and the options are in the task's metadata."""
    from mara_bench.harness.datasets import get_benchmark
    from mara_bench.harness.evaluation import evaluation_task

    task = evaluation_task(get_benchmark("aime2025"), data="samples", limit=1, system="vc", accept_after=1)
    (log,) = eval(
        task, model=scripted_model(lambda m, c: "\\boxed{1}"), log_dir=str(tmp_path), display="none"
    )
    assert log.status == "success", log.error
    (step,) = log.plan.steps
    assert step.solver == "mara_bench/system_solver" and step.params["system"] == "vc"
    assert log.eval.metadata["system"] == "vc" and log.eval.metadata["system_options"] == {"accept_after": 1}
