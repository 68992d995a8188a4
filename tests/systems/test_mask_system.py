"""M-ASK: plan → search/retrieve/summary/update (Update vs Add) → answer; <end>, iteration bound, every-turn answers;
the released code's prompts by default, the appendix's behind ``prompts="appendix"``, our compact ones behind
``prompts="compact"``."""

import json
from pathlib import Path

import pytest

from mara_bench.harness.retrieval.corpus import split_contents
from mara_bench.harness.systems import mask, mask_parse, run_system
from mara_bench.harness.toolbase.output import Hit, QueryResult, ToolText, render_results
from mara_bench.judges import lexical

QUESTION = "Who is the current CEO of the company that developed ChatGPT?"
GOLD = ["Sam Altman"]
PLAN = (
    "<q1>Which company developed ChatGPT?</q1><a1>unkown</a1>"
    "<q2>Who is its CEO?</q2><a2>unkown</a2><final_answer>unknown</final_answer>"
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
                "<final_answer>OpenAI</final_answer>",
                "<final_answer>Sam Altman</final_answer>",
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
    assert "t1: Q: company that developed ChatGPT | A: OpenAI" in second_search
    assert "1. Query: company that developed ChatGPT | Summary: OpenAI" in second_search
    assert "[EXAMPLE_PROMPT]" not in episode.calls[0].messages[0]["content"]
    # the update agent's Update rewrote t1 in place; its Add appended t3 (seen by the answer agent of turn 2)
    assert "t3: Q: CEO of OpenAI | A: Sam Altman" in episode.calls[8].messages[-1]["content"]
    # per-turn F1 (what the trainer turns into rewards) and the final score, with M-ASK's F1 variant
    assert [lexical.score(a["answer"], GOLD, "mask")["f1"] for a in episode.intermediate_answers] == [
        0.0,
        0.0,
        1.0,
    ]
    assert (await doubles.score(episode, GOLD, "lexical"))["f1"] == 1.0


async def test_iteration_bound_then_single_answer(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: "[1] doc"})
    chat = doubles.Chat(
        scripts(
            ["<search>a</search>", "<search>b</search>"],
            ["<evidence>ea</evidence>", "no tags here"],
            ["<Update>t2</Update>", "<Update>t9</Update>"],
            ["<final_answer>final</final_answer>"],
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
    assert [(c.parent, c.turn) for c in episode.calls] == [
        (None, 0),
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 2),
        (4, 2),
        (5, 2),
        (6, 2),
    ]
    assert len(episode.intermediate_answers) == 1
    assert (await doubles.score(episode, GOLD, "lexical"))["f1"] == 0.0


async def test_without_kma_raw_documents_join_the_trajectory(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: "[1] raw document text"})
    chat = doubles.Chat(scripts(["<search>q</search>", "<end>"], [], [], ["<final_answer>A</final_answer>"]))
    episode = await mask.run(QUESTION, chat, toolbox, kma=False)
    # no summary/update agent is called (their scripts are empty); the answer reads the last completed turn
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("plan", None, 0),
        ("search", 0, 1),
        ("search", 1, 2),
        ("answer", 1, 1),
    ]
    assert episode.meta["trajectory"][-1] == ["q", "[1] raw document text"]
    assert "[1] raw document text" in episode.calls[-1].messages[-1]["content"]
    assert "1. Query: q | Summary: [1] raw document text" in episode.calls[2].messages[-1]["content"]
    assert episode.final_answer == "A"
    assert episode.meta["kma"] is False and episode.meta["stopped"] == "end"
    assert (await doubles.score(episode, GOLD, "lexical"))["f1"] == 0.0


async def test_without_kma_answers_every_turn_up_to_the_iteration_bound(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: "[1] Sam Altman leads OpenAI"})
    chat = doubles.Chat(
        scripts(["<search>CEO of OpenAI</search>"], [], [], ["<final_answer>Altman</final_answer>"])
    )
    episode = await mask.run(QUESTION, chat, toolbox, kma=False, answer_every_turn=True, max_iterations=1)
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("plan", None, 0),
        ("search", 0, 1),
        ("answer", 1, 1),
    ]
    assert episode.meta["stopped"] == "iteration_limit"
    assert [(a["turn"], a["answer"]) for a in episode.intermediate_answers] == [(0, "unknown"), (1, "Altman")]
    # "Altman" vs "Sam Altman": precision 1, recall 1/2 -> F1 2/3
    assert (await doubles.score(episode, GOLD, "lexical"))["f1"] == pytest.approx(2 / 3)


async def test_immediate_end_still_answers(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: ""})
    chat = doubles.Chat(scripts(["<end>"], [], [], ["<final_answer>B</final_answer>"]))
    episode = await mask.run(QUESTION, chat, toolbox, answer_every_turn=True)
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("plan", None, 0),
        ("search", 0, 1),
        ("answer", 0, 0),
    ]
    assert episode.final_answer == "B" and episode.tool_calls == []
    assert episode.meta["stopped"] == "end"
    assert (await doubles.score(episode, GOLD, "lexical"))["f1"] == 0.0


def test_parsers():
    assert mask_parse.plan_values(PLAN, QUESTION, "final_answer") == mask_parse.PlanReading(
        [("Which company developed ChatGPT?", "unkown"), ("Who is its CEO?", "unkown")], [1, 2], "unknown"
    )
    assert mask_parse.update_operation("<Update>t2</Update>", [1, 2]) == ("update", 2)
    assert mask_parse.update_operation("<Update>t3</Update>", [1, 3]) == ("update", 3)
    # the released trajectory's keys are t<i>: no other spelling names a step
    assert mask_parse.update_operation("<Update>τ2</Update>", [1, 2]) == ("invalid", None)
    assert mask_parse.update_operation("<Update>t3</Update>", [1, 2]) == ("invalid", None)
    assert mask_parse.update_operation("<Add>t3</Add>", [1, 2]) == ("add", None)
    assert mask_parse.update_operation("replace t1", [1, 2]) == ("invalid", None)


async def test_default_prompts_are_the_released_codes(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
    chat = doubles.Chat(
        scripts(
            ["<search>CEO of OpenAI</search>", "<end>"],
            ["<evidence>Sam Altman</evidence>"],
            ["<Add>t3</Add>"],
            ["<final_answer>Sam Altman</final_answer>"],
        )
    )
    episode = await mask.run(QUESTION, chat, toolbox)
    plan, search, summary, update, _, answer = episode.calls
    assert episode.meta["prompts"] == "code" and episode.final_answer == "Sam Altman"
    # the planner's few-shot examples and <final_answer> tag, as in qa_manager/base_agent.py
    assert (
        "in the tag <final_answer>...</final_answer>, and inside this tag follow the style of:\n\n- Example:\n"
        in (plan.messages[0]["content"])
    )
    assert "Answer: <final_answer>The White Rabbit</final_answer>" in answer.messages[0]["content"]
    assert plan.messages[1]["content"] == f"Question: {QUESTION}"
    # the update agent is given the predicted answer its system prompt mentions (the planner's, "unknown")
    assert update.messages[1]["content"] == (
        f"Original question: {QUESTION}\nFinal answer: unknown\nThinking trajectory:\n"
        "t1: Q: Which company developed ChatGPT? | A: unkown\nt2: Q: Who is its CEO? | A: unkown\n\n"
        "New query: CEO of OpenAI\nEvidence: Sam Altman"
    )
    assert search.messages[1]["content"].startswith(
        f"Original question: {QUESTION}\n\nThinking trajectory:\nt1: Q:"
    )
    assert "Search history:\n(No previous searches)Output only one" in search.messages[1]["content"]
    assert (
        summary.messages[1]["content"]
        == "Query: CEO of OpenAI\nCandidate Documents:\n[1] Sam Altman is CEO of OpenAI."
    )


async def test_appendix_prompts_behind_the_switch(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
    appendix_plan = PLAN.replace("final_answer", "predicted_answer")
    chat = doubles.Chat(
        {
            "plan": [appendix_plan],
            "search": ["<search>CEO of OpenAI</search>", "<end>"],
            "summary": ["<evidence>Sam Altman</evidence>"],
            "update": ["<Add>t3</Add>"],
            "answer": ["<predicted_answer>Sam Altman</predicted_answer>"],
        }
    )
    episode = await mask.run(QUESTION, chat, toolbox, prompts="appendix")
    assert episode.final_answer == "Sam Altman" and episode.meta["prompts"] == "appendix"
    update = episode.calls_by_role("update")[0]
    assert "Final answer" not in update.messages[1]["content"]
    assert (
        "t1: sub-question: Which company developed ChatGPT? | sub-answer: unkown"
        in update.messages[1]["content"]
    )
    assert "<predicted_answer>" in episode.calls[0].messages[0]["content"]
    with pytest.raises(
        ValueError, match="no prompt set 'paper'; choose -T prompts= one of appendix, code, compact"
    ):
        await mask.run(QUESTION, chat, toolbox, prompts="paper")


PAPER_MESSAGES_SHA256 = {
    "code": "20b0eccbd5dda4b22fda7e5b6ca9ca47da9a8b41dbb5e7a80aaf565dae093133",
    "appendix": "4069cb96609bd90d67de857c8b5864a3d20721305c48aa5283c77d33086a83b0",
}
"""sha256 of the JSON of every call's messages of one episode (plan, search, summary, update, answer, search) per
verbatim prompt set, as the code before the ``compact`` set built them."""


@pytest.mark.parametrize("prompts", ["code", "appendix"])
async def test_the_verbatim_prompt_sets_build_the_same_messages_as_before_the_compact_set(doubles, prompts):
    import hashlib
    import json

    tag = mask.LAYOUTS[prompts].answer_tag
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
    chat = doubles.Chat(
        {
            "plan": [PLAN.replace("final_answer", tag)],
            "search": ["<search>CEO of OpenAI</search>", "<end>"],
            "summary": ["<evidence>Sam Altman</evidence>"],
            "update": ["<Update>t2</Update>"],
            "answer": [f"<{tag}>Sam Altman</{tag}>"],
        }
    )
    episode = await mask.run(QUESTION, chat, toolbox, answer_every_turn=True, prompts=prompts)
    messages = [call.messages for call in episode.calls]
    assert hashlib.sha256(json.dumps(messages).encode()).hexdigest() == PAPER_MESSAGES_SHA256[prompts]


async def test_the_compact_prompts_are_ours_one_short_user_message_each_with_the_copied_text_last(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
    chat = doubles.Chat(
        scripts(
            ["<search>CEO of OpenAI</search>", "<end>"],
            ["<evidence>Sam Altman</evidence>"],
            ["<Update>t2</Update>"],
            ["<final_answer>Sam Altman</final_answer>"],
        )
    )
    episode = await mask.run(QUESTION, chat, toolbox, answer_every_turn=True, prompts="compact")
    assert episode.final_answer == "Sam Altman" and episode.meta["prompts"] == "compact"
    assert episode.meta["trajectory"][1] == ["CEO of OpenAI", "Sam Altman"]  # the update replaced step 2
    plan, search, summary, update, answer, last_search = episode.calls
    for call in episode.calls:
        [message] = call.messages  # no system message
        assert message["role"] == "user" and len(message["content"]) < 300, call.role
    # what each role copies comes last: the question, the documents, the new step, the trajectory
    assert plan.messages[0]["content"].endswith(f"\nQuestion: {QUESTION}")
    assert search.messages[0]["content"].endswith(f"\nQuestion: {QUESTION}")
    assert "Searches:\n(none)\n" in search.messages[0]["content"]
    assert "Searches:\nCEO of OpenAI -> Sam Altman\n" in last_search.messages[0]["content"]
    assert summary.messages[0]["content"].endswith("\nDocuments:\n[1] Sam Altman is CEO of OpenAI.")
    assert update.messages[0]["content"].endswith("\nNew query: CEO of OpenAI\nEvidence: Sam Altman")
    assert answer.messages[0]["content"].endswith(
        "\nThinking trajectory:\nt1: Which company developed ChatGPT? -> unkown\nt2: CEO of OpenAI -> Sam Altman"
    )


async def test_a_bad_prompts_value_is_named_with_the_choices_and_answer_style_needs_examples(doubles):
    with pytest.raises(
        ValueError, match=r"prompts: 'paper' is not a valid choice; choose one of code, appendix, compact"
    ):
        await run_system("mask", QUESTION, None, None, prompts="paper")
    with pytest.raises(
        ValueError, match="answer_style fills the answer examples, which prompts 'compact' has none of"
    ):
        await mask.run(
            QUESTION, doubles.Chat({}), None, prompts="compact", answer_style="Answer: <final_answer>x"
        )


_DOCS_VECTORS = json.loads((Path(__file__).parent / "vectors" / "mask_summary_docs.json").read_text())[
    "cases"
]


def _retrieved(query: str, contents: list[str]) -> ToolText:
    """What the local ``retrieve`` tool returns for these corpus passages (``mara_bench.harness.tools.local_search``)."""
    hits = []
    for number, passage in enumerate(contents):
        title, text = split_contents(passage)
        hits.append(Hit(title=title, source=f"doc{number}", text=text, contents=passage))
    return render_results([QueryResult(query, hits)])


@pytest.mark.parametrize("case", _DOCS_VECTORS, ids=lambda case: case["query"])
async def test_the_summary_agent_sees_retrieved_documents_as_m_asks_code_renders_them(doubles, case):
    # rendered by M-ASK's own SummaryAgent._build_messages (see the file's "source"): "Doc1: <contents>" lines
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: _retrieved(query, case["contents"])})
    chat = doubles.Chat(
        scripts(
            [f"<search>{case['query']}</search>", "<end>"],
            ["<evidence>x</evidence>"],
            ["<Add>t3</Add>"],
            ["<final_answer>x</final_answer>"],
        )
    )
    episode = await mask.run(QUESTION, chat, toolbox)
    assert episode.calls_by_role("summary")[0].messages[-1]["content"] == case["user"]


async def test_plan_reset_restarts_the_trajectory_from_the_question_and_the_plans_answer(doubles):
    """M-ASK's released training loop (``async_rollout_single``): after the Plan agent, the trajectory is the one
    step (question, plan's answer); its sub-questions are gone, its answer stays the prediction of turn 0."""
    replies = scripts(
        ["<search>company that developed ChatGPT</search>", "<search>CEO of OpenAI</search>", "<end>"],
        ["<evidence>OpenAI</evidence>", "<evidence>Sam Altman</evidence>"],
        ["<Add>t2</Add>", "<Update>t1</Update>"],
        ["<final_answer>OpenAI</final_answer>", "<final_answer>Sam Altman</final_answer>"],
    )
    runs = {}
    for reset in (False, True):
        toolbox, _ = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
        runs[reset] = await mask.run(
            QUESTION, doubles.Chat(replies), toolbox, answer_every_turn=True, plan_reset=reset
        )
    kept, reset = runs[False], runs[True]
    first_search = reset.calls[1].messages[-1]["content"]
    assert f"Thinking trajectory:\nt1: Q: {QUESTION} | A: unknown\n" in first_search
    assert "Which company developed ChatGPT?" not in first_search
    assert "Which company developed ChatGPT?" in kept.calls[1].messages[-1]["content"]
    # the plan call itself is unchanged: its steps are counted, its answer is turn 0's prediction
    assert (reset.calls[0].meta["steps"], reset.intermediate_answers[0]["answer"]) == (2, "unknown")
    # <Add>t2</Add> appends to the one step, then <Update>t1</Update> overwrites the question's step
    assert reset.meta["trajectory"] == [
        ["CEO of OpenAI", "Sam Altman"],
        ["company that developed ChatGPT", "OpenAI"],
    ]
    assert kept.meta["trajectory"] == [
        ["CEO of OpenAI", "Sam Altman"],
        ["Who is its CEO?", "unkown"],
        ["company that developed ChatGPT", "OpenAI"],
    ]
    # the released format check counts the steps the Update agent saw: t2 is the next step only after the reset
    update_formats = {r: [c.meta["legal_format"] for c in runs[r].calls_by_role("update")] for r in runs}
    assert update_formats == {False: [False, True], True: [True, True]}
    assert reset.final_answer == kept.final_answer == "Sam Altman"


async def test_every_call_records_whether_its_reply_is_in_the_released_format(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: "[1] doc"})
    chat = doubles.Chat(
        scripts(
            ["<search>a</search>", "Searching: <search>b</search>"],
            ["<evidence>ea</evidence>", "no tags here"],
            ["<Update>t2</Update>", "<Update>t9</Update>"],
            ["<final_answer>final</final_answer>", "final"],
        )
    )
    episode = await mask.run(QUESTION, chat, toolbox, max_iterations=2, answer_every_turn=True)
    assert [(c.role, c.meta["legal_format"]) for c in episode.calls] == [
        ("plan", True),
        ("search", True),
        ("summary", True),
        ("update", True),
        ("answer", True),
        ("search", False),
        ("summary", False),
        ("update", False),  # t9: the trajectory has 3 steps
        ("answer", False),  # no tag
    ]


_PARSE_VECTORS = json.loads((Path(__file__).parent / "vectors" / "mask_parse_values.json").read_text())


def _parsed(case: dict, switches: str) -> object:
    """Our value for one released ``parse_response`` vector (the released plain bugs on with ``released``)."""
    question, passages = _PARSE_VECTORS["question"], _PARSE_VECTORS["passages"]
    reply, released = case["reply"], switches == "released"
    if case["role"] == "plan":
        reading = mask_parse.plan_values(reply, question, "final_answer")
        return [list(step) for step in reading.steps], reading.answer, [f"t{n}" for n in reading.numbers]
    if case["role"] == "search":
        action = mask_parse.search_action(reply, "released" if released else "end")
        return action.action, action.query
    if case["role"] == "summary":
        return mask_parse.evidence(reply, "capital of Arvena", passages)
    if case["role"] == "update":
        steps = [list(step) for step in case["trajectory"]]
        _, number = mask_parse.update_operation(reply, list(range(1, len(steps) + 1)))
        return [*steps, ["Q", "E"]] if number is None else [*steps[: number - 1], ["Q", "E"], *steps[number:]]
    trajectory = [tuple(step) for step in case["trajectory"]]
    return mask_parse.final_answer(reply, trajectory, "final_answer", "released" if released else "skip")


def _released(case: dict) -> object:
    keys = {"plan": ("steps", "answer", "keys"), "search": ("action", "query"), "summary": ("evidence",)}
    keys |= {"update": ("updated",), "answer": ("answer",)}
    values = tuple(case[key] for key in keys[case["role"]])
    return values if len(values) > 1 else values[0]


@pytest.mark.parametrize("case", _PARSE_VECTORS["cases"], ids=lambda case: case["role"])
def test_values_equal_the_released_parse_response(case):
    # computed by running M-ASK's released parse_response methods (see the file's "source"); with the switches set
    # to "released", every value is the released one, the plan's step numbers (its trajectory's keys) included
    assert _parsed(case, "released") == _released(case)


def test_by_default_only_the_switched_behaviours_differ():
    # the plan's values are the released ones; only its step numbers are renumbered 1..n by default
    plans = [c for c in _PARSE_VECTORS["cases"] if c["role"] == "plan"]
    assert all(_parsed(c, "defaults")[:2] == _released(c)[:2] for c in plans)
    differing = [
        c for c in _PARSE_VECTORS["cases"] if c["role"] != "plan" and _parsed(c, "defaults") != _released(c)
    ]
    assert {c["role"] for c in differing} == {"search", "answer"}
    assert all(c["action"] == "search" and c["query"] == "" for c in differing if c["role"] == "search")
    for case in (c for c in differing if c["role"] == "answer"):  # the "largest number" guess, or nothing
        assert _parsed(case, "defaults") == case["trajectory"][0][1] != case["answer"]


async def test_an_empty_search_ends_the_loop_unless_released(doubles):
    toolbox, log = doubles.toolbox({"retrieve": lambda query: "[1] nothing"})
    for choice, searched in (("end", []), ("released", [""])):
        chat = doubles.Chat(
            scripts(
                ["<search></search>", "<end>"],
                ["<evidence>x</evidence>"],
                ["<Add>t3</Add>"],
                ["<final_answer>B</final_answer>"],
            )
        )
        episode = await mask.run(QUESTION, chat, toolbox, empty_query=choice)
        assert [call.arguments["query"] for call in episode.tool_calls] == searched


async def test_released_step_numbers_keep_the_plans_keys_and_an_add_can_overwrite(doubles):
    toolbox, _ = doubles.toolbox({"retrieve": lambda query: DOCS[query]})
    plan = "<q1>Which company developed ChatGPT?</q1><a1>unkown</a1><q3>Who is its CEO?</q3><a3>unkown</a3>"
    for numbers, shown, final in (
        ("renumbered", "t2: Q: Who is its CEO?", ["Who is its CEO?", "unkown"]),
        ("released", "t3: Q: Who is its CEO?", ["CEO of OpenAI", "Sam Altman"]),
    ):
        chat = doubles.Chat(
            {
                "plan": [plan],
                "search": ["<search>CEO of OpenAI</search>", "<end>"],
                "summary": ["<evidence>Sam Altman</evidence>"],
                "update": ["<Add>t3</Add>"],
                "answer": ["<final_answer>Sam Altman</final_answer>"],
            }
        )
        episode = await mask.run(QUESTION, chat, toolbox, step_numbers=numbers)
        [update] = episode.calls_by_role("update")
        assert shown in update.messages[-1]["content"] and update.meta["legal_format"]
        # released: t3 exists, so the Add of step n + 1 = 3 overwrites it; renumbered: it is appended
        assert episode.meta["trajectory"][1] == final and episode.meta["trajectory"][-1] == [
            "CEO of OpenAI",
            "Sam Altman",
        ]
