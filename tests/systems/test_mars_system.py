"""MARS: tool call → FFD packing → parallel System 1 → answer; python bypass; turn limit; sys1=false; tool errors."""

import hashlib
import json

import pytest

from mara_bench.harness.systems import mars, run_system
from mara_bench.harness.systems.tokens import CharEstimate, token_meter
from mara_bench.harness.toolbase.output import ToolText

QUESTION = "What is the capital of France?"
PURPOSE = "find the capital"


def page(number: int, tokens: int) -> str:
    """A page of exactly ``tokens`` estimated tokens (4 characters each), numbered like the tools' results."""
    head = f"[{number}] "
    return head + chr(ord("a") + number) * (tokens * 4 - len(head))


def tool_call(name: str, arguments: dict, purpose: str = PURPOSE) -> str:
    return (
        "<tool_call>"
        + json.dumps({"name": name, "arguments": arguments, "purpose": purpose})
        + "</tool_call>"
    )


def distil(messages):
    user = messages[-1]["content"]
    found = [str(n) for n in range(1, 9) if f"[{n}] " in user]
    return "<think>scratch</think>distilled pages " + ",".join(found)


@pytest.fixture
def budget():
    # leave exactly 100 tokens of pages per System-1 call under the 4-characters-per-token estimate
    return 100 + (10_000 - mars.page_capacity(QUESTION, PURPOSE, 10_000, CharEstimate()))


async def test_tool_call_is_packed_and_distilled_in_parallel(doubles, budget):
    assert mars.page_capacity(QUESTION, PURPOSE, budget, CharEstimate()) == 100
    results = {"paris": [page(1, 60), page(2, 50), page(3, 150)], "france": [page(4, 30), page(5, 30)]}

    def search(query):
        pages = [text for q in query for text in results[q]]
        return ToolText("\n\n".join(pages), pages)

    toolbox, log = doubles.toolbox({"search": search})
    chat = doubles.Chat(
        {
            "system2": [
                "<think>need facts</think>" + tool_call("search", {"query": ["paris", "france"]}),
                "<think>ok</think><answer>Paris</answer>",
            ],
            "system1": distil,
        },
        delay=0.01,
    )
    episode = await mars.run(QUESTION, chat, toolbox, sys1_budget=budget)

    assert episode.final_answer == "Paris"
    assert [c.role for c in episode.calls if c.role == "system2"] == ["system2", "system2"]
    assert log == [("search", {"query": ["paris", "france"]})]
    assert [t.call for t in episode.tool_calls] == [0]
    # pages 0..4 = [1]60, [2]50, [3]150, [4]30, [5]30 tokens; capacity 100:
    # [3] is over-long -> alone (truncated); FFD on the rest: 60 | 50 | 60+30 | 50+30 -> bins [0,3], [1,4]
    sys1 = episode.calls_by_role("system1")
    assert sorted((c.meta["pages"], c.meta["truncated"]) for c in sys1) == [
        ([0, 3], False),
        ([1, 4], False),
        ([2], True),
    ]
    assert all(c.parent == 0 and c.turn == 0 for c in sys1)
    assert chat.peak["system1"] == 3  # all three System-1 calls were in flight together
    truncated = next(c for c in sys1 if c.meta["truncated"])
    assert page(3, 150)[:400] in truncated.messages[-1]["content"]
    assert page(3, 150)[:401] not in truncated.messages[-1]["content"]
    # System 2's second turn sees the distillates (thinking stripped), not the raw pages
    handed_back = episode.calls[-1].messages[-1]["content"]
    assert handed_back.startswith("<tool_response>")
    assert "distilled pages 1,4" in handed_back and "distilled pages 2,5" in handed_back
    assert "scratch" not in handed_back and page(1, 60) not in handed_back
    assert episode.calls[-1].parent == 0 and episode.calls[-1].turn == 1
    assert episode.meta["token_counting"].startswith("estimate")
    # System 1 is told the purpose and the question
    assert all(f"Purpose of the tool call: {PURPOSE}" in c.messages[-1]["content"] for c in sys1)
    assert all(c.messages[-1]["content"].endswith(f"# User Question: {QUESTION}") for c in sys1)
    assert (await doubles.score(episode, ["Paris"], "lexical"))["em"] == 1.0


async def test_python_output_bypasses_system1(doubles):
    # one System-2 turn calls python and search: only the search pages go through System 1
    toolbox, _ = doubles.toolbox(
        {"python": lambda code: "PYTHON-OUT 42", "search": lambda query: page(1, 10)}
    )
    chat = doubles.Chat(
        {
            "system2": [
                tool_call("python", {"code": "print(6*7)"}) + tool_call("search", {"query": "6*7"}),
                "<answer>42</answer>",
            ],
            "system1": distil,
        }
    )
    episode = await mars.run("6 times 7?", chat, toolbox)
    assert episode.final_answer == "42"
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("system2", None, 0),
        ("system1", 0, 0),
        ("system2", 0, 1),
    ]
    (sys1,) = episode.calls_by_role("system1")
    assert "PYTHON-OUT" not in sys1.messages[-1]["content"] and page(1, 10) in sys1.messages[-1]["content"]
    handed_back = episode.calls[-1].messages[-1]["content"]
    assert "PYTHON-OUT 42\n\ndistilled pages 1" in handed_back
    assert [(t.name, t.arguments, t.call) for t in episode.tool_calls] == [
        ("python", {"code": "print(6*7)"}, 0),
        ("search", {"query": "6*7"}, 0),
    ]
    assert (await doubles.score(episode, ["42"], "lexical"))["em"] == 1.0


async def test_turn_limit_stops_without_an_answer(doubles):
    toolbox, _ = doubles.toolbox({"search": lambda query: "nothing"})
    chat = doubles.Chat({"system2": lambda messages: "<think>still thinking</think>", "system1": []})
    episode = await mars.run(QUESTION, chat, toolbox, max_turns=3)
    assert episode.final_answer is None
    assert [(c.role, c.turn, c.parent) for c in episode.calls] == [
        ("system2", 0, None),
        ("system2", 1, 0),
        ("system2", 2, 1),
    ]
    assert episode.meta["stopped"] == "turn_limit"
    assert (await doubles.score(episode, ["Paris"], "lexical"))["em"] == 0.0


async def test_sys1_false_feeds_raw_outputs(doubles):
    toolbox, _ = doubles.toolbox(
        {"search": lambda query: ToolText(page(1, 10) + "\n" + page(2, 10), [page(1, 10), page(2, 10)])}
    )
    chat = doubles.Chat(
        {"system2": [tool_call("search", {"query": "x"}), "<answer>A</answer>"], "system1": []}
    )
    episode = await mars.run(QUESTION, chat, toolbox, sys1=False)
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [("system2", None, 0), ("system2", 0, 1)]
    handed_back = episode.calls[-1].messages[-1]["content"]
    assert page(1, 10) in handed_back and page(2, 10) in handed_back
    assert episode.meta["sys1"] is False
    assert (await doubles.score(episode, ["A"], "lexical"))["em"] == 1.0


async def test_tool_errors_and_bad_calls_go_back_to_system2(doubles):
    toolbox, _ = doubles.toolbox({"search": doubles.failing("search backend down")})
    chat = doubles.Chat(
        {
            "system2": [
                tool_call("search", {"query": "x"}) + "<tool_call>{not json</tool_call>",
                "<answer>?</answer>",
            ],
            "system1": [],
        }
    )
    episode = await mars.run(QUESTION, chat, toolbox)
    handed_back = episode.calls[-1].messages[-1]["content"]
    assert "Tool error (search): search backend down" in handed_back
    assert "not valid JSON" in handed_back
    assert episode.tool_calls[0].error == "search backend down"
    assert episode.calls_by_role("system1") == []


class WordTokenizer:
    """One token per whitespace-separated word (a stand-in for the model's tokenizer)."""

    name_or_path = "words"

    def encode(self, text, add_special_tokens=False):
        return text.split()

    def decode(self, ids):
        return " ".join(ids)


async def test_tokens_are_counted_with_the_chat_tokenizer(doubles):
    words = "[1] " + " ".join(["w"] * 50)
    toolbox, _ = doubles.toolbox({"search": lambda query: words})
    chat = doubles.Chat(
        {"system2": [tool_call("search", {"query": "x"}), "<answer>A</answer>"], "system1": distil},
        tokenizer=WordTokenizer(),
    )
    framing = 10_000 - mars.page_capacity(QUESTION, PURPOSE, 10_000, token_meter(chat))
    episode = await mars.run(QUESTION, chat, toolbox, sys1_budget=20 + framing)
    assert episode.meta["token_counting"] == "tokenizer: words"
    (sys1,) = episode.calls_by_role("system1")
    assert sys1.meta["truncated"] is True
    assert "[1] " + " ".join(["w"] * 19) in sys1.messages[-1]["content"]
    assert " ".join(["w"] * 20) not in sys1.messages[-1]["content"]


async def test_a_budget_without_room_for_pages_is_a_clear_error_before_any_call(doubles):
    chat = doubles.Chat({"system2": [], "system1": []})
    with pytest.raises(ValueError, match="sys1_budget=10 tokens leaves no room"):
        await mars.run(QUESTION, chat, doubles.toolbox({})[0], sys1_budget=10)
    assert chat.calls == []


def test_an_over_long_page_is_truncated_even_beside_an_empty_one():
    packed = mars.pack_pages(["", "x" * 1000, "y" * 40], 100, CharEstimate())
    assert packed == [([1], ["x" * 400], True), ([2, 0], ["y" * 40, ""], False)]


async def paper_messages(doubles, **options):
    """Every call's messages of one MARS episode: a search whose two pages go to System 1, then an answer."""
    toolbox, _ = doubles.toolbox(
        {"search": lambda query: ToolText(page(1, 10) + "\n" + page(2, 10), [page(1, 10), page(2, 10)])}
    )
    chat = doubles.Chat(
        {
            "system2": [tool_call("search", {"query": "capital of France"}), "<answer>Paris</answer>"],
            "system1": distil,
        }
    )
    episode = await mars.run(QUESTION, chat, toolbox, **options)
    return [call.messages for call in episode.calls]


PAPER_MESSAGES_SHA256 = "5c5c245fb6f3203aebce5c6568d0056c4f5331e882b5a1ee4a0d3365d164d3d0"
"""sha256 of the JSON of every call's messages of ``paper_messages``, as the code before the ``prompts`` option
built them (the paper's verbatim System 2 and System 1 prompts)."""


async def test_the_default_prompts_are_the_papers_byte_for_byte(doubles):
    messages = await paper_messages(doubles)
    assert hashlib.sha256(json.dumps(messages).encode()).hexdigest() == PAPER_MESSAGES_SHA256
    assert messages == await paper_messages(doubles, prompts="paper")


async def test_the_compact_prompts_are_ours_short_and_put_the_question_last(doubles):
    system2, system1, answer = await paper_messages(doubles, prompts="compact")
    assert system2[0]["role"] == "system" and len(system2[0]["content"]) < 200
    assert "Tools: search." in system2[0]["content"]  # the one tool offered, on one line
    assert '<tool_call>{"name": "search", "arguments": {"query": ' in system2[0]["content"]
    assert "<answer>" in system2[0]["content"]
    assert system2[-1] == {"role": "user", "content": QUESTION}
    [message] = system1  # no system prompt: the purpose, the pages, then the question last
    assert message["role"] == "user" and message["content"].endswith(f"\nQuestion: {QUESTION}")
    assert f"Purpose of the tool call: {PURPOSE}" in message["content"]
    assert page(1, 10) in message["content"] and page(2, 10) in message["content"]
    assert "distilled pages 1,2" in answer[-1]["content"]


def test_the_compact_prompt_leaves_system1_more_room_for_pages():
    paper = mars.page_capacity(QUESTION, PURPOSE, 10_000, CharEstimate())
    compact = mars.page_capacity(QUESTION, PURPOSE, 10_000, CharEstimate(), "compact")
    framing = mars.system1_messages(QUESTION, PURPOSE, [], "compact")
    assert compact == 10_000 - sum(CharEstimate().count(m["content"]) for m in framing)
    assert compact > paper + 200  # the paper's ~1k-character System 1 system prompt is gone


async def test_compact_packing_fills_bins_to_the_compact_capacity(doubles):
    framing = 10_000 - mars.page_capacity(QUESTION, PURPOSE, 10_000, CharEstimate(), "compact")
    pages = [page(1, 60), page(2, 50), page(3, 40)]
    toolbox, _ = doubles.toolbox({"search": lambda query: ToolText("\n\n".join(pages), pages)})
    chat = doubles.Chat(
        {"system2": [tool_call("search", {"query": "x"}), "<answer>A</answer>"], "system1": distil}
    )
    episode = await mars.run(QUESTION, chat, toolbox, sys1_budget=100 + framing, prompts="compact")
    bins = sorted(c.meta["pages"] for c in episode.calls_by_role("system1"))
    assert bins == [[0, 2], [1]]  # 60+40 fills a 100-token bin exactly; the paper framing would not fit it


async def test_a_bad_prompts_value_is_named_with_the_choices():
    with pytest.raises(
        ValueError, match=r"prompts: 'short' is not a valid choice; choose one of paper, compact"
    ):
        await run_system("mars", QUESTION, None, None, prompts="short")
