"""MATPO: planner → nested worker (recap, tools, final summary) → thinking stripped → boxed answer."""

import json

from mara_bench.core.episodes import Reply
from mara_bench.harness.systems import matpo

QUERY = "Which word was deleted from Rule 601 in 2011?"
BOXED_INSTRUCTION = " You should follow the format instruction in the requestion strictly and wrap the final answer in \\boxed{}."


def use(server: str, tool: str, arguments: dict) -> str:
    return (
        f"<use_mcp_tool>\n<server_name>{server}</server_name>\n<tool_name>{tool}</tool_name>\n"
        f"<arguments>\n{json.dumps(arguments)}\n</arguments>\n</use_mcp_tool>"
    )


async def test_nested_worker_with_recap_and_summary(doubles):
    toolbox, log = doubles.toolbox(
        {"search": lambda query: "[1] Rule 601 amended 2011", "browse": lambda url: "page"}
    )
    chat = doubles.Chat(
        {
            "planner": [
                "<think>plan</think>"
                + use("browsing_agent", "search_and_browse", {"subtask": "Find the 2011 amendment"}),
                "<think>done</think>The word is \\boxed{competent}.",
            ],
            "worker": [
                "<think>search</think>"
                + use("search_and_scrape_webpage", "google_search", {"q": "Rule 601 2011", "gl": "us"}),
                "<think>enough</think>I have what I need.",
                "<think>private notes</think>## Conclusion:\n**competent** was deleted."
                + use("search_and_scrape_webpage", "scrape", {"url": "http://x"}),
            ],
        }
    )
    episode = await matpo.run(QUERY, chat, toolbox)

    assert episode.final_answer == "competent"
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("planner", None, 0),
        ("worker", 0, 0),
        ("worker", 0, 0),
        ("worker", 0, 0),
        ("planner", 0, 1),
    ]
    planner_query = episode.calls[0].messages[1]["content"]
    assert planner_query == QUERY + BOXED_INSTRUCTION
    first_worker, summary = episode.calls[1], episode.calls[3]
    # the authors' code: the worker's system prompt (leading newline kept) with its own date and objective
    worker_system = first_worker.messages[0]["content"]
    assert worker_system.startswith("\nIn this environment you have access")
    assert "Today is: 2025-07-16" in worker_system
    assert "You are an agent that performs the task of searching and browsing the web" in worker_system
    assert ' "param2": "value2 "escaped string""\n' in worker_system  # the code's string renders \" as "
    recap = first_worker.messages[1]["content"]
    assert recap.startswith(
        f'[CONTEXT]\nYou are a sub-agent working on a specific part of a larger task.\nThe main task is: "{planner_query}"'
    )
    assert 'Your current subtask is: "Find the 2011 amendment"' in recap
    assert log == [("search", {"query": "Rule 601 2011"})]
    assert episode.tool_calls[0].call == 1
    assert "[1] Rule 601 amended 2011" in episode.calls[2].messages[-1]["content"]
    summary_prompt = summary.messages[-1]["content"]
    assert f'The main task was: "{planner_query}"' in summary_prompt
    assert 'Your assigned subtask was: "Find the 2011 amendment"' in summary_prompt
    assert "You have failed" not in summary_prompt
    assert summary.meta == {"subtask": 1, "summary": True, "finished": True, "trimmed": False}
    returned = episode.calls[4].messages[-1]["content"]
    assert returned == "## Conclusion:\n**competent** was deleted."
    assert episode.meta == {"stopped": "answer", "subtasks": 1}
    assert (await doubles.score(episode, ["competent"], "lexical"))["em"] == 1.0


async def test_worker_turn_limit_asks_for_a_failed_summary(doubles):
    toolbox, _ = doubles.toolbox({"search": lambda query: "nothing", "browse": lambda url: "page"})
    chat = doubles.Chat(
        {
            "planner": [use("browsing_agent", "search_and_browse", {"subtask": "s"}), "\\boxed{x}"],
            "worker": [use("search_and_scrape_webpage", "scrape", {"url": "http://a"})] * 2 + ["summary"],
        }
    )
    episode = await matpo.run(QUERY, chat, toolbox, worker_max_turns=2)
    assert [(c.role, c.parent, c.turn, c.meta.get("summary", False)) for c in episode.calls] == [
        ("planner", None, 0, False),
        ("worker", 0, 0, False),
        ("worker", 0, 0, False),
        ("worker", 0, 0, True),
        ("planner", 0, 1, False),
    ]
    summary = episode.calls[3]
    assert summary.meta["finished"] is False
    assert "You have failed to complete the task." in summary.messages[-1]["content"]
    assert [t.name for t in episode.tool_calls] == ["browse", "browse"]
    assert episode.calls[4].messages[-1]["content"] == "summary"
    assert (await doubles.score(episode, ["competent"], "lexical"))["em"] == 0.0


async def test_truncated_worker_is_summarised_as_failed(doubles):
    cut = Reply(text="<think>very long", finish_reason="length")
    chat = doubles.Chat(
        {
            "planner": [use("browsing_agent", "search_and_browse", {"subtask": "s"}), "\\boxed{competent}"],
            "worker": [cut, "<think>x</think>## Conclusion:\nnot found"],
        }
    )
    episode = await matpo.run(QUERY, chat, None)
    assert [(c.role, c.parent, c.meta.get("finished")) for c in episode.calls] == [
        ("planner", None, None),
        ("worker", 0, None),
        ("worker", 0, False),
        ("planner", 0, None),
    ]
    assert "You have failed to complete the task." in episode.calls[2].messages[-1]["content"]
    assert episode.calls[3].messages[-1]["content"] == "## Conclusion:\nnot found"
    assert (await doubles.score(episode, ["competent"], "lexical"))["em"] == 1.0


async def test_bad_planner_tool_use_is_a_tool_error_and_turn_limit_forces_a_final_answer(doubles):
    chat = doubles.Chat(
        {
            "planner": [
                use("x", "search_and_browse", {"task": "?"}),
                use("x", "other", {}),
                "<think>out of turns</think>## Conclusion:\nBest guess \\boxed{competent}",
            ]
        }
    )
    episode = await matpo.run(QUERY, chat, None, max_turns=2)
    # issue 13: a planner at its turn limit answers from what it has (the authors' main-agent summary prompt)
    assert episode.final_answer == "competent"
    assert "Tool error: the only tool is search_and_browse" in episode.calls[1].messages[-1]["content"]
    forced = episode.calls[2]
    assert (forced.role, forced.parent, forced.turn, forced.meta) == ("planner", 1, 2, {"forced": True})
    assert forced.messages[-1]["content"].startswith("\n[SYSTEM]\nThis is a direct instruction to you.")
    assert f'The original task was: "{QUERY}{BOXED_INSTRUCTION}"' in forced.messages[-1]["content"]
    assert "You have failed to complete the task. Review the conversation" in forced.messages[-1]["content"]
    assert episode.meta == {"stopped": "turn_limit", "subtasks": 0}
    assert episode.calls_by_role("worker") == []


async def test_without_the_planner_summary_the_turn_limit_ends_the_run_unanswered(doubles):
    """The authors' released scripts (disable_final_summary_for_main_agent=True): no summary at the turn limit."""
    chat = doubles.Chat({"planner": [use("x", "other", {}), use("x", "other", {}), "never asked"]})
    episode = await matpo.run(QUERY, chat, None, max_turns=2, planner_summary=False)
    assert [call.role for call in episode.calls] == ["planner", "planner"]
    assert episode.final_answer is None
    assert episode.meta == {"stopped": "turn_limit", "subtasks": 0}


def test_parse_tool_use():
    assert matpo.parse_tool_use("no tool") is None
    assert matpo.parse_tool_use("<think>" + use("a", "b", {}) + "</think>plain") is None
    broken = matpo.parse_tool_use(
        "<use_mcp_tool><tool_name>t</tool_name><arguments>{x</arguments></use_mcp_tool>"
    )
    assert broken.tool == "t" and "not valid JSON" in broken.error
