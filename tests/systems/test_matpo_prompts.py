"""MATPO's prompt sets: ``paper`` (the default) keeps the authors' verbatim messages byte for byte; ``compact`` (ours,
for tiny offline models) is short, asks for the same ``<use_mcp_tool>`` blocks and puts what a role copies last."""

import hashlib
import json
from pathlib import Path

import pytest

from mara_bench.harness.prompts.sets import prompt_set
from mara_bench.harness.systems import matpo, run_system
from mara_bench.trainer.demos.matpo import TOOL_USE

QUESTION = "What is the capital of Arvena?"
RESULTS = "[1] Arvena: The capital of Arvena is Lomir.\n[2] Belcor: The capital of Belcor is Tarsin."
PAPER_MESSAGES_SHA256 = "cd44dc84562f667eb060cfbf9758e8db151e86a7cde5ca5cab2ec0f627c4e40b"
"""sha256 of every call's messages of the two scripted episodes below, recorded on the code before the ``prompts``
option existed, then again once the summary prompts kept MATPO's leading and trailing newlines (issue #24)."""


def use(server: str, tool: str, arguments: dict) -> str:
    """A tool-call block as the MATPO demonstrations write it."""
    return TOOL_USE.format(server=server, tool=tool, arguments=json.dumps(arguments))


DELEGATE = use("agent", "search_and_browse", {"subtask": "Arvena"})
SEARCH = use("search", "google_search", {"q": "capital of Arvena"})


async def _episodes(doubles, **options):
    """A worker that finishes (then the planner answers) and one that reaches its turn limit (then the planner
    reaches its own and is asked for a forced answer)."""
    toolbox, _ = doubles.toolbox({"search": lambda query: RESULTS, "browse": lambda url: "page"})
    finished = doubles.Chat({"planner": [DELEGATE, "\\boxed{Lomir}"], "worker": [SEARCH, "Lomir", "Lomir"]})
    failed = doubles.Chat({"planner": [DELEGATE, "\\boxed{Lomir}"], "worker": [SEARCH, SEARCH, "none"]})
    return [
        await matpo.run(QUESTION, finished, toolbox, worker_max_turns=2, **options),
        await matpo.run(QUESTION, failed, toolbox, max_turns=1, worker_max_turns=2, **options),
    ]


def _sha256(episodes) -> str:
    messages = [call.messages for episode in episodes for call in episode.calls]
    return hashlib.sha256(json.dumps(messages).encode()).hexdigest()


async def test_the_paper_prompts_are_the_default_and_unchanged(doubles):
    assert _sha256(await _episodes(doubles)) == PAPER_MESSAGES_SHA256


async def test_the_compact_prompts_are_ours_short_and_end_with_what_the_role_copies(doubles):
    finished, failed = await _episodes(doubles, prompts="compact")
    planner, worker, _, summary, answer = finished.calls
    assert planner.messages[-1] == {"role": "user", "content": QUESTION}
    assert worker.messages[-1]["content"].endswith("\nSubtask: Arvena")
    assert summary.messages[-1]["content"].endswith("\nSubtask: Arvena")
    assert "ran out of turns" not in summary.messages[-1]["content"]
    assert "ran out of turns" in failed.calls[3].messages[-1]["content"]  # the worker hit its turn limit
    forced = failed.calls[-1].messages[-1]["content"]
    assert "ran out of turns" in forced and forced.endswith(f"Task: {QUESTION}")
    assert answer.messages[-1]["content"] == "Lomir" and finished.final_answer == "Lomir"
    for call in (planner, worker):  # one short system prompt naming the tool the parser reads
        assert call.messages[0]["role"] == "system" and len(call.messages[0]["content"]) < 100
        assert "<use_mcp_tool>" in call.messages[0]["content"]
    assert "search_and_browse" in planner.messages[0]["content"]
    assert "google_search" in worker.messages[0]["content"]


async def test_a_bad_prompts_value_is_named_with_the_choices():
    with pytest.raises(
        ValueError, match=r"prompts: 'short' is not a valid choice; choose one of paper, compact"
    ):
        await run_system("matpo", QUESTION, None, None, prompts="short")


_SUMMARY_VECTORS = json.loads((Path(__file__).parent / "vectors" / "matpo_summary_prompts.json").read_text())


@pytest.mark.parametrize(
    "case", _SUMMARY_VECTORS["cases"], ids=lambda c: f"{c['commit'][:7]}-failed{c['failed']}"
)
def test_summary_prompts_equal_matpos_renderings_byte_for_byte(case):
    # rendered by MATPO's own generate_agent_summarize_prompt (see the file's "source"): its f-strings start and
    # end with a newline
    prompts = prompt_set("matpo", "paper")
    planner = matpo.planner_summary_prompt(prompts, case["main_query"], case["failed"])
    assert planner == case["planner_summary"]
    worker = matpo.worker_summary_prompt(prompts, case["main_query"], case["subtask"], case["failed"])
    assert worker == case["worker_summary"]


_RELEASED_VECTORS = json.loads(
    (Path(__file__).parent / "vectors" / "matpo_released_worker_summary.json").read_text()
)


@pytest.mark.parametrize("case", _RELEASED_VECTORS["cases"], ids=lambda c: f"failed{c['failed']}")
def test_released_worker_summary_equals_matpos_rereading_of_its_recap(case):
    # computed by MATPO's released final_summary on its own recap (see the file's "source"): a query or subtask
    # with a double quote is cut at the first one
    prompts = prompt_set("matpo", "paper")
    [_, recap] = prompts.messages(
        "worker", {"main_query": case["main_query"], "task_description": case["subtask"]}
    )
    inputs = matpo.released_summary_inputs(recap["content"])
    assert matpo.worker_summary_prompt(prompts, *inputs, case["failed"]) == case["worker_summary"]


async def test_summary_query_released_cuts_a_quoted_query_in_the_worker_summary_only(doubles):
    question = 'Who wrote "The Hobbit"?'
    toolbox, _ = doubles.toolbox({"search": lambda query: RESULTS, "browse": lambda url: "page"})
    summaries = []
    for choice in ("whole", "released"):
        chat = doubles.Chat({"planner": [DELEGATE, "\\boxed{Tolkien}"], "worker": ["Tolkien", "Tolkien"]})
        episode = await matpo.run(question, chat, toolbox, summary_query=choice)
        opening, summary = episode.calls_by_role("worker")
        assert question in opening.messages[-1]["content"]  # the recap itself is whole either way
        summaries.append(summary.messages[-1]["content"])
    assert question in summaries[0] and question not in summaries[1]
    assert (
        'Who wrote "\nYour assigned subtask was: "Arvena"' in summaries[1]
    )  # cut at the query's first quote


async def test_summary_query_released_needs_the_paper_recap():
    with pytest.raises(ValueError, match="summary_query=released re-reads the paper prompts' recap"):
        await matpo.run(QUESTION, None, None, summary_query="released", recap=False)
