"""MARS reads real pages: a search call's results are fetched with the real browse tool from a local server, packed
into System-1 bins, and each bin distilled once; ``pages=false`` packs snippets; ``-T tools=`` picks System 2's
tools; the per-system token budgets reach each system's calls."""

import json

import pytest

from mara_bench.harness.accounting import account
from mara_bench.harness.protocols import get_protocol
from mara_bench.harness.systems import TOOL_SETTINGS, build_toolbox, get_system, mars
from mara_bench.harness.systems.tokens import CharEstimate
from mara_bench.harness.toolbase.output import ToolText
from mara_bench.harness.tools.pages import read_pages

QUESTION = "Which river flows through the city of Zorvan?"
PURPOSE = "find the river"
LOCAL_PAGES = {"browse_allow_private": True} if "browse_allow_private" in TOOL_SETTINGS else {}
"""Branch sandbox stops browse from reading private addresses unless this setting allows it."""


def article(word: str, paragraphs: int) -> str:
    body = "".join(
        f"<p>Paragraph {n} of the {word} article says the river {word} flows through Zorvan in spring.</p>"
        for n in range(paragraphs)
    )
    return f"<html><head><title>{word} page</title></head><body><article>{body}</article></body></html>"


def tool_call(name: str, arguments: dict) -> str:
    return (
        "<tool_call>"
        + json.dumps({"name": name, "arguments": arguments, "purpose": PURPOSE})
        + "</tool_call>"
    )


@pytest.fixture
def web(page_server, monkeypatch):
    """A Serper stand-in whose three results are a long HTML article, a short text page and a missing page."""
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    links = [("Alpha", "/alpha"), ("Beta", "/beta.txt"), ("Gone", "/gone")]
    organic = [
        {"title": title, "link": page_server.url + path, "snippet": f"snippet of {title}"}
        for title, path in links
    ]
    page_server.pages.update(
        {
            "/search": ("application/json", json.dumps({"organic": organic})),
            "/alpha": ("text/html", article("Alpha", 20)),
            "/beta.txt": ("text/plain", "Beta text page: the river Beta is short. " * 8),
        }
    )
    return page_server


def mars_toolbox(web, **options):
    settings = {"search_backend": "serper", "serper_url": web.url + "/search", **LOCAL_PAGES, **options}
    return build_toolbox(get_system("mars"), settings)


def distil(messages):
    return "<think>reading</think>distilled: " + str(messages[-1]["content"].count("URL: "))


async def test_search_results_are_read_as_pages_packed_and_each_bin_distilled_once(doubles, web):
    framing = 10_000 - mars.page_capacity(QUESTION, PURPOSE, 10_000, CharEstimate())
    chat = doubles.Chat(
        {
            "system2": [tool_call("search", {"query": "Zorvan river"}), "<answer>Alpha</answer>"],
            "system1": distil,
        }
    )
    episode = await mars.run(QUESTION, chat, mars_toolbox(web), sys1_budget=framing + 300)

    assert episode.final_answer == "Alpha" and episode.meta["reading"] == "pages"
    # the search, then one browse per result, all asked for by System 2's first call
    assert [(t.name, t.call) for t in episode.tool_calls] == [("search", 0)] + [("browse", 0)] * 3
    assert sorted(web.seen) == ["/alpha", "/beta.txt", "/gone", "/search"]
    assert [t.error is None for t in episode.tool_calls[1:]].count(True) == 2  # /gone is a 404
    sys1 = episode.calls_by_role("system1")
    prompts = [c.messages[-1]["content"] for c in sys1]
    # every result reached System 1 exactly once: two full pages and the unreadable result's snippet
    assert sum("Paragraph 3 of the Alpha article" in p for p in prompts) == 1
    assert sum("the river Beta is short" in p for p in prompts) == 1
    assert sum("snippet of Gone" in p for p in prompts) == 1
    assert not any("snippet of Alpha" in p or "snippet of Beta" in p for p in prompts)
    # FFD: the Alpha article (over 300 estimated tokens) is truncated alone; Beta and Gone's snippet share a bin
    assert sorted((c.meta["pages"], c.meta["truncated"], c.meta["full_pages"]) for c in sys1) == [
        ([0], True, 1),
        ([1, 2], False, 1),
    ]
    handed_back = episode.calls[-1].messages[-1]["content"]
    assert "distilled: 1" in handed_back and "distilled: 2" in handed_back
    assert "Paragraph 0 of the Alpha" not in handed_back


async def test_pages_false_packs_the_snippets_and_reads_nothing(doubles, web):
    chat = doubles.Chat(
        {"system2": [tool_call("search", {"query": "Zorvan river"}), "<answer>?</answer>"], "system1": distil}
    )
    episode = await mars.run(QUESTION, chat, mars_toolbox(web), pages=False)
    assert episode.meta["reading"] == "snippets"
    assert [t.name for t in episode.tool_calls] == ["search"] and web.seen == ["/search"]
    (sys1,) = episode.calls_by_role("system1")
    assert all(f"snippet of {name}" in sys1.messages[-1]["content"] for name in ("Alpha", "Beta", "Gone"))


async def test_system2_is_offered_the_chosen_tools_and_never_browse(doubles, web):
    toolbox = mars_toolbox(web, tools="search,python")
    assert toolbox.names() == ["browse", "python", "search"]
    chat = doubles.Chat(
        {"system2": [tool_call("browse", {"url": web.url + "/alpha"}), "<answer>?</answer>"], "system1": []}
    )
    episode = await mars.run(QUESTION, chat, toolbox)
    offered = episode.calls[0].messages[0]["content"]
    assert "- search:" in offered and "- python:" in offered
    assert "- scholar:" not in offered and "- browse:" not in offered
    assert (
        "unknown tool 'browse'; available tools: python, search" in episode.calls[1].messages[-1]["content"]
    )
    assert web.seen == []


@pytest.mark.parametrize("system", ["react", "mars", "matpo", "mask"])
def test_an_unknown_tool_name_is_an_error_listing_the_valid_ones(system):
    spec = get_system(system)
    with pytest.raises(
        ValueError, match=rf"unknown tool\(s\) calculator; valid tools: {', '.join(spec.tools)}"
    ):
        build_toolbox(spec, {"tools": f"{spec.tools[0]},calculator"})


def test_tools_is_an_option_of_every_tool_using_system_only():
    assert all("tools" in get_system(name).options() for name in ("react", "mars", "matpo", "mask"))
    assert "tools" not in get_system("vc").options() and "tools" not in get_system("direct").options()


async def test_each_system_gets_its_own_response_budget(doubles):
    toolbox, _ = doubles.toolbox({"search": lambda query: "some page"})
    chat = doubles.Chat(
        {"system2": [tool_call("search", {"query": "x"}), "<answer>A</answer>"], "system1": ["notes"]}
    )
    await mars.run(QUESTION, chat, toolbox, s1_max_tokens=8192, s2_max_tokens=28672)
    assert [(role, sampling) for role, _, sampling in chat.calls] == [
        ("system2", {"max_tokens": 28672}),
        ("system1", {"max_tokens": 8192}),
        ("system2", {"max_tokens": 28672}),
    ]


def test_the_mars_protocol_sets_the_papers_budgets():
    settings = get_protocol("mars").system_settings
    assert settings["s1_max_tokens"] == 8192 and settings["s2_max_tokens"] == 28672
    assert settings["sys1_budget"] == 23552


class RoleTokenizers:
    """A chat whose System 1 model has its own tokenizer (as ``local/`` exposes through ``tokenizer_for``)."""

    def __init__(self, tokenizer):
        self.tokenizer = None
        self._tokenizer = tokenizer

    def tokenizer_for(self, role):
        return self._tokenizer if role == "system1" else None


def test_budget_tokens_are_counted_with_system1s_tokenizer():
    from mara_bench.harness.systems.tokens import token_meter

    class Words:
        name_or_path = "words"

        def encode(self, text, add_special_tokens=False):
            return text.split()

    assert token_meter(RoleTokenizers(Words()), role="system1").description == "tokenizer: words"
    assert token_meter(RoleTokenizers(Words()), role="system2").description.startswith("estimate")


async def test_scholar_reads_at_most_scholar_k_papers(doubles, web):
    works = [
        {"display_name": f"Paper {n}", "doi": f"{web.url}/paper{n}.txt", "publication_year": 2020}
        for n in range(7)
    ]
    web.pages["/works"] = ("application/json", json.dumps({"results": works}))
    web.pages.update({f"/paper{n}.txt": ("text/plain", f"Full text of paper {n}.") for n in range(7)})
    toolbox = mars_toolbox(web, openalex_url=web.url + "/works", scholar_k=5)
    chat = doubles.Chat(
        {
            "system2": [tool_call("scholar", {"query": "Zorvan hydrology"}), "<answer>?</answer>"],
            "system1": distil,
        }
    )
    episode = await mars.run(QUESTION, chat, toolbox)
    assert [(t.name, t.origin) for t in episode.tool_calls] == [("scholar", None)] + [
        ("browse", "scholar")
    ] * 5
    counts = account(episode, mars.ROLES, ["scholar", "browse"], {})
    assert (counts["papers_read"], counts["pages_read"], counts["tool_calls_browse"]) == (5, 0, 5)
    (sys1,) = episode.calls_by_role("system1")
    assert all(f"Full text of paper {n}." in sys1.messages[-1]["content"] for n in range(5))
    assert "paper 5" not in sys1.messages[-1]["content"]


def test_the_inspect_chat_counts_with_the_tokenizer_of_the_local_model_serving_a_role(tmp_path):
    from inspect_ai.model import get_model

    from mara_bench.harness.systems.inspect_adapter import InspectChat
    from mara_bench.harness.systems.tokens import token_meter
    from mara_bench.harness.testing import scripted_model
    from mara_bench.harness.tinymodel import build_tiny_model

    local = get_model(f"local/{build_tiny_model(tmp_path / 'tiny')}")
    chat = InspectChat({"system1": local, "system2": scripted_model(["x"])})
    meter = token_meter(chat, role="system1")
    assert meter.description.startswith("tokenizer: ")
    assert meter.count("hello world") == len(
        local.api.tokenizer.encode("hello world", add_special_tokens=False)
    )
    assert token_meter(chat, role="system2").description.startswith("estimate")  # an API model: the estimate


async def test_pages_are_fetched_concurrently_up_to_the_limit():
    import asyncio

    sources = [f"http://example.test/{n}" for n in range(25)] + ["corpus-id-7"]
    output = ToolText("results", [f"snippet {n}" for n in range(26)], sources)
    in_flight, peak = 0, 0

    async def fetch(url):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return None if url.endswith("/3") else f"page {url}"

    documents = await read_pages(output, fetch, concurrency=10)
    assert peak == 10
    assert [d.page for d in documents].count(True) == 24
    assert (
        documents[3].text == "snippet 3" and documents[25].text == "snippet 25"
    )  # unreadable page; corpus id


async def test_without_system1_system2_reads_the_pages_themselves(doubles, web):
    chat = doubles.Chat(
        {"system2": [tool_call("search", {"query": "Zorvan river"}), "<answer>?</answer>"], "system1": []}
    )
    episode = await mars.run(QUESTION, chat, mars_toolbox(web), sys1=False)
    handed_back = episode.calls[-1].messages[-1]["content"]
    assert "Paragraph 19 of the Alpha article" in handed_back and "the river Beta is short" in handed_back
    assert "snippet of Gone" in handed_back and "snippet of Alpha" not in handed_back
    assert episode.calls_by_role("system1") == []
