"""M-ASK: plan → search/retrieve/summary/update (Update vs Add) → answer; <end>, iteration bound, every-turn answers."""

from harness.systems import mask

QUESTION = "Who is the current CEO of the company that developed ChatGPT?"
PLAN = (
    "<q1>Which company developed ChatGPT?</q1><a1>unkown</a1>"
    "<q2>Who is its CEO?</q2><a2>unkown</a2><predicted_answer>unknown</predicted_answer>"
)
DOCS = {
    "company that developed ChatGPT": "[1] OpenAI developed ChatGPT.",
    "CEO of OpenAI": "[1] Sam Altman is CEO of OpenAI.",
}


def scripts(searches, evidence, updates, answers):
    return {"plan": [PLAN], "search": searches, "summary": evidence, "update": updates, "answer": answers}


async def test_update_then_add_then_end_with_answers_every_turn(doubles):
    toolbox, log = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
    chat = doubles.Chat(
        scripts(
            ["<search>company that developed ChatGPT</search>", "<search>CEO of OpenAI</search>", "<end>"],
            ["<evidence>OpenAI</evidence>", "<evidence>Sam Altman</evidence>"],
            ["<Update>t1</Update>", "<Add>t3</Add>"],
            [
                "<predicted_answer>OpenAI</predicted_answer>",
                "<predicted_answer>Sam Altman</predicted_answer>",
            ],
        )
    )
    episode = await mask.run(QUESTION, chat, toolbox, answer_every_turn=True)

    assert episode.final_answer == "Sam Altman"
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("plan", None, 0),
        ("search", 0, 1),
        ("summary", 1, 1),
        ("update", 2, 1),
        ("answer", 3, 1),
        ("search", 4, 2),
        ("summary", 5, 2),
        ("update", 6, 2),
        ("answer", 7, 2),
        ("search", 8, 3),
    ]
    assert [a["answer"] for a in episode.intermediate_answers] == ["unknown", "OpenAI", "Sam Altman"]
    assert [(a["turn"], a["role"]) for a in episode.intermediate_answers] == [
        (0, "plan"),
        (1, "answer"),
        (2, "answer"),
    ]
    assert [c.meta["operation"] for c in episode.calls_by_role("update")] == ["update", "add"]
    assert episode.meta["trajectory"] == [
        ["company that developed ChatGPT", "OpenAI"],
        ["Who is its CEO?", "unkown"],
        ["CEO of OpenAI", "Sam Altman"],
    ]
    assert episode.meta["stopped"] == "end"
    assert episode.calls[-1].meta["action"] == "end"
    assert log == [
        ("retrieve", {"query": "company that developed ChatGPT"}),
        ("retrieve", {"query": "CEO of OpenAI"}),
    ]
    assert [t.call for t in episode.tool_calls] == [1, 5]
    # the summary agent saw the retrieved documents; the second search saw the updated state and the history
    assert "[1] OpenAI developed ChatGPT." in episode.calls[2].messages[-1]["content"]
    second_search = episode.calls[5].messages[-1]["content"]
    assert "t1: sub-question: company that developed ChatGPT | sub-answer: OpenAI" in second_search
    assert "company that developed ChatGPT -> OpenAI" in second_search
    assert "[EXAMPLE_PROMPT]" not in episode.calls[0].messages[0]["content"]


async def test_iteration_bound_then_single_answer(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: "[1] doc"})
    chat = doubles.Chat(
        scripts(
            ["<search>a</search>", "<search>b</search>"],
            ["<evidence>ea</evidence>", "no tags here"],
            ["<Update>t2</Update>", "<Update>t9</Update>"],
            ["<predicted_answer>final</predicted_answer>"],
        )
    )
    episode = await mask.run(QUESTION, chat, toolbox, max_iterations=2)
    assert [c.role for c in episode.calls] == [
        "plan",
        "search",
        "summary",
        "update",
        "search",
        "summary",
        "update",
        "answer",
    ]
    assert episode.meta["stopped"] == "iteration_limit"
    assert [(c.meta["operation"], c.meta["step"]) for c in episode.calls_by_role("update")] == [
        ("update", 2),
        ("invalid", None),
    ]
    assert episode.meta["trajectory"] == [
        ["Which company developed ChatGPT?", "unkown"],
        ["a", "ea"],
        ["b", "no tags here"],
    ]
    assert episode.final_answer == "final"
    assert episode.calls[-1].parent == 6 and episode.calls[-1].turn == 2
    assert len(episode.intermediate_answers) == 1


async def test_without_kma_raw_documents_join_the_trajectory(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: "[1] raw document text"})
    chat = doubles.Chat(
        scripts(["<search>q</search>", "<end>"], [], [], ["<predicted_answer>A</predicted_answer>"])
    )
    episode = await mask.run(QUESTION, chat, toolbox, kma=False)
    assert [c.role for c in episode.calls] == ["plan", "search", "search", "answer"]
    assert episode.meta["trajectory"][-1] == ["q", "[1] raw document text"]
    assert "[1] raw document text" in episode.calls[-1].messages[-1]["content"]
    assert episode.final_answer == "A"


async def test_immediate_end_still_answers(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: ""})
    chat = doubles.Chat(scripts(["<end>"], [], [], ["<predicted_answer>B</predicted_answer>"]))
    episode = await mask.run(QUESTION, chat, toolbox, answer_every_turn=True)
    assert [c.role for c in episode.calls] == ["plan", "search", "answer"]
    assert episode.final_answer == "B" and episode.tool_calls == []


def test_parsers():
    assert mask.parse_plan(PLAN) == (
        [("Which company developed ChatGPT?", "unkown"), ("Who is its CEO?", "unkown")],
        "unknown",
    )
    assert mask.parse_update("<Update>τ2</Update>", 2) == ("update", 1)
    assert mask.parse_update("<Update>t3</Update>", 2) == ("invalid", None)
    assert mask.parse_update("<Add>t3</Add>", 2) == ("add", None)
    assert mask.parse_update("replace t1", 2) == ("invalid", None)
