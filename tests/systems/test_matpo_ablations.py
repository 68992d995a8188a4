"""MATPO's switches as the paper describes them: no final summary (the planner reads the worker's raw last message),
no user-query recap, and the worker context trimmed before its summary when it would not fit."""

import json

from mara_bench.harness.systems import matpo
from mara_bench.harness.systems.tokens import CharEstimate

QUERY = "Which word was deleted from Rule 601 in 2011?"


def use(server: str, tool: str, arguments: dict) -> str:
    return (
        f"<use_mcp_tool>\n<server_name>{server}</server_name>\n<tool_name>{tool}</tool_name>\n"
        f"<arguments>\n{json.dumps(arguments)}\n</arguments>\n</use_mcp_tool>"
    )


DELEGATE = use("browsing_agent", "search_and_browse", {"subtask": "Find the 2011 amendment"})
SEARCH = use("search_and_scrape_webpage", "google_search", {"q": "Rule 601"})


async def test_summary_false_hands_the_raw_last_message_to_the_planner(doubles):
    toolbox, _ = doubles.toolbox({"search": lambda query: "[1] result"})
    raw = "<think>notes</think>It was **competent**."
    chat = doubles.Chat(
        {"planner": [DELEGATE, "\\boxed{competent}"], "worker": ["<think>go</think>" + SEARCH, raw]}
    )
    episode = await matpo.run(QUERY, chat, toolbox, summary=False)
    assert [(c.role, c.meta.get("summary", False)) for c in episode.calls] == [
        ("planner", False),
        ("worker", False),
        ("worker", False),
        ("planner", False),
    ]
    assert episode.calls[-1].messages[-1]["content"] == raw  # thinking included: no summary cleans it up
    assert episode.final_answer == "competent"


async def test_recap_false_gives_the_worker_the_subtask_alone(doubles):
    chat = doubles.Chat({"planner": [DELEGATE, "\\boxed{x}"], "worker": ["done", "## Conclusion:\nx"]})
    with_recap = await matpo.run(QUERY, chat, None)
    chat = doubles.Chat({"planner": [DELEGATE, "\\boxed{x}"], "worker": ["done", "## Conclusion:\nx"]})
    without = await matpo.run(QUERY, chat, None, recap=False)
    assert QUERY in with_recap.calls[1].messages[1]["content"]
    assert without.calls[1].messages[1]["content"] == "Find the 2011 amendment"


def test_trim_for_summary_removes_the_latest_messages_until_the_summary_fits():
    messages = [
        {"role": "system", "content": "s" * 40},  # 10 estimated tokens
        {"role": "user", "content": "u" * 40},  # 10
        {"role": "assistant", "content": "a" * 80},  # 20
        {"role": "user", "content": "t" * 400},  # 100
    ]
    meter = CharEstimate()
    # prompt 4 tokens + reserve 50: all fits in 200, drop the 100-token tool response in 150, keep the head in 60
    assert matpo.trim_for_summary(messages, "p" * 16, meter, 200, 50) == messages
    assert matpo.trim_for_summary(messages, "p" * 16, meter, 150, 50) == messages[:3]
    assert matpo.trim_for_summary(messages, "p" * 16, meter, 60, 50) == messages[:2]


async def test_a_worker_over_its_context_is_trimmed_and_summarised_at_once(doubles):
    toolbox, _ = doubles.toolbox({"search": lambda query: "x" * 4000})  # a 1,000-token tool response
    chat = doubles.Chat(
        {"planner": [DELEGATE, "\\boxed{x}"], "worker": [SEARCH, "## Conclusion:\ntoo long to read"]}
    )
    episode = await matpo.run(QUERY, chat, toolbox, worker_context_tokens=3000, summary_reserve=500)
    worker = episode.calls_by_role("worker")
    assert len(worker) == 2 and worker[1].meta["trimmed"] is True and worker[1].meta["finished"] is False
    summary_context = worker[1].messages
    assert all("x" * 4000 not in m["content"] for m in summary_context)  # the tool response was removed
    assert [m["role"] for m in summary_context] == ["system", "user", "assistant", "user"]
    assert summary_context[-1]["content"].startswith("\n[SYSTEM]")


async def test_a_worker_cut_off_at_the_token_limit_is_trimmed_before_its_summary(doubles):
    from mara_bench.core.episodes import Reply

    cut = Reply(text="<think>" + "y" * 4000, finish_reason="length")  # a 1,000-token reply cut off
    chat = doubles.Chat({"planner": [DELEGATE, "\\boxed{x}"], "worker": [cut, "## Conclusion:\nfailed"]})
    episode = await matpo.run(QUERY, chat, None, worker_context_tokens=3000, summary_reserve=500)
    summary = episode.calls_by_role("worker")[1]
    assert summary.meta["trimmed"] is True and summary.meta["finished"] is False
    assert [m["role"] for m in summary.messages] == ["system", "user", "user"]
    assert "You have failed to complete the task." in summary.messages[-1]["content"]
