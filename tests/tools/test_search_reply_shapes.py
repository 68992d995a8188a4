"""A search backend answering valid JSON of the wrong shape gives a tool error naming the first problems, for
every backend, both through the toolbox and in a real Inspect eval (where it used to crash the sample with an
AttributeError and, with Inspect's fail-on-error, abort the eval)."""

from __future__ import annotations

import json

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample

from mara_bench.core.episodes import ToolError
from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.harness.tools import build_toolbox, tool_documents
from mara_bench.judges.scorers import math_scorer

KEYS = {"SERPER_API_KEY": "serper-secret", "SERPAPI_API_KEY": "serpapi-secret"}
SERVICES = {  # name -> (tool, settings, path on the fake server, the service's name in messages)
    "serper": ("search", {"search_backend": "serper"}, "/serper", "serper search"),
    "serpapi": ("search", {"search_backend": "serpapi"}, "/serpapi", "serpapi search"),
    "scholar-serpapi": ("scholar", {"scholar_backend": "serpapi"}, "/serpapi", "serpapi scholar"),
    "scholar-openalex": ("scholar", {"scholar_backend": "openalex"}, "/openalex", "openalex scholar"),
}


def toolbox(web, tool, settings):
    return build_toolbox(
        [tool],
        environ=KEYS,
        serper_url=f"{web.url}/serper",
        serpapi_url=f"{web.url}/serpapi",
        openalex_url=f"{web.url}/openalex",
        http_backoff=0,
        http_attempts=1,
        **settings,
    )


@pytest.mark.parametrize(
    ("service", "body", "problems"),
    [
        (
            "serper",
            {"organic": [1, "x", None]},
            "organic.0: Input should be a valid dictionary or instance of SerperResult; "
            "organic.1: Input should be a valid dictionary or instance of SerperResult; "
            "organic.2: Input should be a valid dictionary or instance of SerperResult",
        ),
        ("serper", {"organic": [{"link": ["a", "list"]}]}, "organic.0.link: Input should be a valid string"),
        (
            "serper",
            ["a", "list"],
            "the answer: Input should be a valid dictionary or instance of SerperReply",
        ),
        ("serpapi", {"organic_results": {"not": "a list"}}, "organic_results: Input should be a valid list"),
        ("serpapi", {"error": 42}, "error: Input should be a valid string"),
        (
            "scholar-serpapi",
            {"organic_results": [{"title": "t", "inline_links": {"cited_by": {"total": "many"}}}]},
            "organic_results.0.inline_links.cited_by.total: Input should be a valid integer, unable to parse "
            "string as an integer",
        ),
        ("scholar-openalex", {"results": "none"}, "results: Input should be a valid list"),
        (
            "scholar-openalex",
            {"results": [{"authorships": [{"author": "Ada"}], "abstract_inverted_index": {"word": "first"}}]},
            "results.0.authorships.0.author: Input should be a valid dictionary or instance of OpenAlexAuthor; "
            "results.0.abstract_inverted_index.word: Input should be a valid list",
        ),
    ],
)
async def test_a_reply_of_the_wrong_shape_is_a_tool_error(web, service, body, problems):
    tool, settings, path, name = SERVICES[service]
    web.route(path, web.reply(body=body))
    with pytest.raises(ToolError) as caught:
        await toolbox(web, tool, settings).call(tool, query="q")
    assert str(caught.value) == f"{name}: the answer from {web.url}{path} has an unexpected shape: {problems}"


async def test_only_the_first_three_problems_are_named(web):
    web.route("/serper", web.reply(body={"organic": [1, 2, 3, 4, 5]}))
    with pytest.raises(ToolError, match=r"organic\.2: [^;]*\(and 2 more\)$"):
        await toolbox(web, "search", {"search_backend": "serper"}).call("search", query="q")


async def test_missing_and_null_fields_are_not_a_wrong_shape(web):
    work = {"display_name": "Paper", "id": "https://openalex.org/W1", "primary_location": None, "doi": None}
    other = {"display_name": "Other", "id": "https://openalex.org/W2", "authorships": [{"author": None}]}
    web.route("/openalex", web.reply(body={"results": [work, other]}))
    output = await toolbox(web, "scholar", {}).call("scholar", query="q")
    assert tool_documents(output) == [
        "[1] Paper\nURL: https://openalex.org/W1",
        "[2] Other\nURL: https://openalex.org/W2",
    ]


def agent(messages, config) -> str:  # noqa: ARG001
    if len(messages) == 2:
        call = {"name": "search", "arguments": {"query": "everest"}, "purpose": "look it up"}
        return f"<think>Search.</think><tool_call>{json.dumps(call)}</tool_call>"
    return "<think>The search failed.</think><answer>\\boxed{42}</answer>"


def test_a_wrong_shape_in_an_eval_goes_back_to_the_agent_and_the_sample_is_scored(web, tmp_path, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "serper-secret")
    web.route("/serper", web.reply(body={"organic": [1, "x", None]}))
    task = Task(
        dataset=[Sample(id="q", input="what is 6*7?", target="42")],
        solver=system_solver(
            get_system("react").setup(
                {
                    "search_backend": "serper",
                    "serper_url": f"{web.url}/serper",
                    "http_attempts": 1,
                    "python_sandbox": "unisolated",  # the python tool is not used here: no need for bubblewrap
                }
            )
        ),
        scorer=math_scorer(),
    )
    [log] = eval(task, model=scripted_model(agent), log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success"
    [sample] = log.samples
    assert sample.error is None
    [tool_call] = stored_episode(sample.store).tool_calls
    assert tool_call.error.startswith(
        f"serper search: the answer from {web.url}/serper has an unexpected shape: "
    )
    assert sample.scores["math"].value["correct"] == 1.0
