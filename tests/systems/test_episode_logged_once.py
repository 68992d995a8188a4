"""The Episode reaches the log once per sample: a real eval of the multi-agent V-C system (four model calls, each
in its role's agent span) writes the Episode to the store once, at the end of the run, never per turn. Inspect
records a store write as a StoreEvent in each span enclosing it (the solver's span and the ``solvers`` span) and in
the solver's StateEvent, so the log holds exactly those two additions of the whole Episode, none inside an agent
span and no later replacement; and because the Episode is stored as JSON text, each of those events refers to one
attachment holding that text instead of carrying its own copy."""

from __future__ import annotations

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.event import SpanBeginEvent, StateEvent, StoreEvent
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import includes

from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import EPISODE_KEY, stored_episode
from mara_bench.harness.testing import scripted_model

WRONG = "**Final Verdict:** invalid.\n\n**List of Findings:**\n* 6*7 is not 41\n\n**Correctness:** Wrong"
PASS = "**Final Verdict:** fine.\n\n**List of Findings:**\n\n**Correctness:** Correct"


def _replies(messages, config) -> str:
    prompt = "\n".join(message.text for message in messages)
    if "Correctness" in prompt:  # the verifier's prompt asks for a verdict in this format
        return PASS if "\\boxed{42}" in prompt else WRONG
    return "6*7 = \\boxed{42}" if "Findings" in prompt else "6*7 = \\boxed{41}"


def _vc_eval_samples(log_dir, count: int) -> list:
    """The logged samples of a real V-C eval of ``count`` questions on the scripted model."""
    samples = [Sample(id=i, input=f"Compute 6*7 ({i}).", target="42") for i in range(count)]
    task = Task(
        dataset=samples, solver=system_solver(get_system("vc").setup(dict(accept_after=1))), scorer=includes()
    )
    (log,) = eval(task, model=scripted_model(_replies), log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    return read_eval_log(log.location).samples


def test_the_episode_is_stored_once_per_sample_after_the_run(tmp_path):
    for sample in _vc_eval_samples(tmp_path, 3):
        spans = {event.id: event for event in sample.events if isinstance(event, SpanBeginEvent)}
        episode_writes = [
            (change.op, change.path, spans[event.span_id].type)
            for event in sample.events
            if isinstance(event, StoreEvent)
            for change in event.changes
            if change.path.startswith(f"/{EPISODE_KEY}")
        ]
        assert episode_writes == [("add", f"/{EPISODE_KEY}", "solver"), ("add", f"/{EPISODE_KEY}", "solvers")]
        roles = [call.role for call in stored_episode(sample.store).calls]
        assert roles == ["solver", "verifier", "corrector", "verifier"]
        agent_spans = [span.name for span in spans.values() if span.type == "agent"]
        assert agent_spans == roles  # every call ran in its role's span, and none of them wrote the Episode


def test_the_log_holds_the_episode_text_once_and_its_events_refer_to_it(tmp_path):
    for sample in _vc_eval_samples(tmp_path, 2):
        text = sample.store[EPISODE_KEY]
        assert isinstance(text, str) and stored_episode(sample.store).final_answer == "6*7 = \\boxed{42}"
        references = {
            change.value
            for event in sample.events
            if isinstance(event, StoreEvent | StateEvent)
            for change in event.changes
            if change.path in (f"/{EPISODE_KEY}", f"/store/{EPISODE_KEY}")
        }
        (reference,) = references  # the store events and the state event all name the same attachment
        assert reference.startswith("attachment://")
        assert sample.attachments[reference.removeprefix("attachment://")] == text
