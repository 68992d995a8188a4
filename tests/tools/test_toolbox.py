"""build_toolbox: configuration errors at build time, local corpus search/retrieve, the blocklist rules, and
tool failures reaching a system as recorded ToolErrors (Inspect-free)."""

from __future__ import annotations

import copy
import logging

import pytest

from mara_bench.core.episodes import EpisodeRecorder, Reply, Toolbox, ToolError
from mara_bench.harness.tools import (
    DEFAULT_BLOCKLIST,
    Blocklist,
    ToolConfigError,
    ToolSettings,
    ToolText,
    build_toolbox,
    tool_documents,
)


async def no_chat(role, messages, **sampling):
    return Reply(text="")


def test_unknown_tool_and_setting_and_bad_values_are_build_errors():
    with pytest.raises(ToolConfigError, match=r"unknown tool\(s\) 'calculator'; available: search, retrieve"):
        build_toolbox(["python", "calculator"])
    with pytest.raises(
        ToolConfigError,
        match=r"^tool settings: search_engine: unknown key; did you mean 'search_backend'\? valid keys: blocklist",
    ):
        build_toolbox(["python"], search_engine="bing")
    with pytest.raises(
        ToolConfigError,
        match="tool settings: search_backend: 'bing' is not a valid choice; choose one of local, serper, serpapi",
    ):
        build_toolbox(["python"], search_backend="bing")
    with pytest.raises(ToolConfigError, match="tool settings: python_timeout: must be a number, got 'soon'"):
        build_toolbox(["python"], python_timeout="soon")
    with pytest.raises(ToolConfigError, match="tool settings: k: must be >= 1, got '0'"):
        build_toolbox(["python"], k="0")
    with pytest.raises(ToolConfigError, match="tool settings: http_backoff: must be >= 0, got -1"):
        build_toolbox(["python"], http_backoff=-1)
    with pytest.raises(ToolConfigError, match="blocklist pattern '/datasets' has no host"):
        build_toolbox(["browse"], blocklist="/datasets")


def test_string_options_are_converted_like_inspect_task_arguments():
    settings = ToolSettings.from_options(
        {"k": "3", "python_timeout": "2.5", "python_memory_mb": "256", "blocklist": "a.com, b.org/x ,"}
    )
    assert (settings.k, settings.python_timeout, settings.python_memory_mb) == (3, 2.5, 256)
    assert settings.blocklist == ("a.com", "b.org/x")
    assert ToolSettings().blocklist == DEFAULT_BLOCKLIST


def test_local_search_needs_an_index():
    with pytest.raises(ToolConfigError, match="pass -T index=DIR or set MARA_INDEX.*mara index build"):
        build_toolbox(["search"], environ={})
    with pytest.raises(ToolConfigError, match="tool 'retrieve': .* is not a retrieval index"):
        build_toolbox(["retrieve"], index="/nonexistent/index")


async def test_local_search_and_retrieve_over_the_dense_index(dense_index):
    box = build_toolbox(["search", "retrieve"], environ={"MARA_INDEX": str(dense_index)}, k=2)
    output = await box.call(
        "search", query=["What is the capital city of Japan?", "Who found the element radium?"]
    )
    documents = tool_documents(output)
    assert [doc.split("\n")[:2] for doc in documents[::2]] == [
        ["[1] Tokyo", "ID: doc16"],
        ["[3] Marie Curie", "ID: doc6"],
    ]
    assert documents[0].endswith(
        "Tokyo is the capital of Japan and the most populous metropolitan area in the world, with over 37 million residents. It was formerly known as Edo."
    )
    retrieved = await box.call("retrieve", query="Which antibiotic did Fleming discover?")
    assert tool_documents(retrieved)[0].startswith("[1] Penicillin\nID: doc10\n")


async def test_query_argument_is_validated(bm25_index):
    box = build_toolbox(["retrieve"], index=str(bm25_index), max_queries=2)
    with pytest.raises(ToolError, match="retrieve: at most 2 queries per call, got 3"):
        await box.call("retrieve", query=["a", "b", "c"])
    with pytest.raises(ToolError, match="retrieve: 'query' is empty"):
        await box.call("retrieve", query=["  "])
    with pytest.raises(ToolError, match="'query' must be a string or a list of strings"):
        await box.call("retrieve", query=42)
    with pytest.raises(ToolError, match="bad arguments for tool 'retrieve'"):
        await box.call("retrieve", question="a")


@pytest.mark.parametrize(
    ("url", "blocked"),
    [
        ("https://huggingface.co/datasets/cais/hle", True),
        ("https://HuggingFace.co/Datasets/x", True),
        ("https://huggingface.co/datasets", True),
        ("https://huggingface.co/datasetsfoo", False),
        ("https://huggingface.co/Qwen/Qwen3-8B", False),
        ("https://www.chegg.com/homework-help/abc", True),
        ("http://m.quizlet.com/123", True),
        ("https://notchegg.com/", False),
        ("https://github.com/centerforaisafety/hle/blob/main/README.md", True),
        ("https://github.com/centerforaisafety/other", False),
        ("https://en.wikipedia.org/wiki/Chegg", False),
    ],
)
def test_default_blocklist_rules(url, blocked):
    assert Blocklist().blocks(url) is blocked


def test_custom_blocklist_replaces_the_defaults():
    blocklist = Blocklist(["example.org/private"])
    assert blocklist.blocks("https://sub.example.org/private/page")
    assert not blocklist.blocks("https://example.org/public")
    assert not blocklist.blocks("https://www.chegg.com/x")


async def test_a_failing_tool_reaches_the_system_as_a_recorded_tool_error():
    box = build_toolbox(["python"], python_timeout=5)
    recorder = EpisodeRecorder("react", "question?", no_chat, box)
    failed = await recorder.tool("python", call=0, turn=1, code="raise RuntimeError('boom')")
    worked = await recorder.tool("python", call=0, turn=1, code="print(6 * 7)")
    missing = await recorder.tool("search", turn=1, query="x")
    assert (failed.output, failed.turn, failed.call) == ("", 1, 0)
    assert failed.error.startswith("python: the code raised an error (exit status 1)")
    assert failed.error.endswith("RuntimeError: boom")
    assert (worked.output, worked.error) == ("42", None)
    assert missing.error == "unknown tool 'search'; available tools: python"
    assert [call.name for call in recorder.episode.tool_calls] == ["python", "python", "search"]


async def test_a_tool_that_fails_in_the_harness_reaches_the_system_as_a_tool_error_and_the_log(caplog):
    async def broken(**arguments):
        raise RecursionError("maximum recursion depth exceeded")

    recorder = EpisodeRecorder("react", "question?", no_chat, Toolbox({"python": broken}))
    with caplog.at_level(logging.ERROR, logger="mara_bench.core.episodes"):
        failed = await recorder.tool("python", turn=1, code="print(1)")
    assert failed.error == "tool 'python' failed: RecursionError: maximum recursion depth exceeded"
    assert "tool 'python' failed in the harness" in caplog.text


async def test_tool_text_keeps_its_documents_through_the_recorder_and_copies(bm25_index):
    recorder = EpisodeRecorder("mars", "q", no_chat, build_toolbox(["search"], index=str(bm25_index), k=2))
    record = await recorder.tool("search", query="Beethoven symphony")
    assert isinstance(record.output, ToolText)
    assert tool_documents(record.output)[0].startswith("[1] Beethoven\nID: doc12\n")
    copied = copy.deepcopy(recorder.episode).tool_calls[0].output
    assert tool_documents(copied) == tool_documents(record.output)
    assert tool_documents("plain text") == ["plain text"]
    assert tool_documents("") == []
