"""Accounting: a scripted MARS eval (real Inspect eval, real search/browse/python tools against a local server) reports
per-question tokens by role, tool calls by tool, pages read, python calls and cost equal to hand counts; the system
solver writes each sample's ``accounting`` score itself (no scorer of its own, so no scorer span per sample)."""

import json
import math

import pytest
from inspect_ai import eval
from inspect_ai.event import ScoreEvent, SpanBeginEvent
from inspect_ai.scorer import SampleScore, Score

from mara_bench.catalog import get_benchmark
from mara_bench.core.episodes import Episode, ModelCall, Reply, ToolCall
from mara_bench.harness.accounting import Price, account, load_prices, per_attempt_means_and_totals, price_of
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.systems import TOOL_SETTINGS
from mara_bench.harness.testing import scripted_model

LOCAL_PAGES = {"browse_allow_private": True} if "browse_allow_private" in TOOL_SETTINGS else {}

S2_SEARCH = (
    "<think>look it up</think>"
    + '<tool_call>{"name": "search", "arguments": {"query": "q"}, "purpose": "facts"}</tool_call>'
    + '<tool_call>{"name": "python", "arguments": {"code": "print(6*7)"}, "purpose": "math"}</tool_call>'
)
S2_ANSWER = "<think>done</think><answer>Zorvan river</answer>"
S1_NOTES = "The pages say the Zorvan river is the answer."


def replies(messages, config):
    if messages[0].text.startswith("You are an expert information extractor"):
        return S1_NOTES
    return S2_ANSWER if "<tool_response>" in messages[-1].text else S2_SEARCH


def tokens(text: str) -> int:
    """``mara_bench.harness.testing.scripted_output``'s usage: 1 input token, len/4 output tokens."""
    return max(1, len(text) // 4)


def test_a_scripted_mars_eval_reports_hand_counted_accounting(page_server, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "test-key")
    organic = [
        {"title": "A", "link": page_server.url + "/a.txt", "snippet": "a"},
        {"title": "B", "link": page_server.url + "/b.txt", "snippet": "b"},
        {"title": "C", "link": page_server.url + "/missing", "snippet": "c"},
    ]
    page_server.pages.update(
        {
            "/search": ("application/json", json.dumps({"organic": organic})),
            "/a.txt": ("text/plain", "Page A about the Zorvan river."),
            "/b.txt": ("text/plain", "Page B about the Zorvan river."),
        }
    )
    task = evaluation_task(
        get_benchmark("bamboogle"),
        data="samples",
        limit=2,
        system="mars",
        search_backend="serper",
        serper_url=page_server.url + "/search",
        **LOCAL_PAGES,
    )
    (log,) = eval(task, model=scripted_model(replies), display="none")
    assert log.status == "success", log.error
    (accounting,) = [score for score in log.results.scores if score.name == "accounting"]
    metrics = {name: metric.value for name, metric in accounting.metrics.items()}
    # per question: System 2 asks twice, System 1 once (3 results fit one bin); search + 3 page reads + python
    expected = {
        "input_tokens": 3,
        "output_tokens": tokens(S2_SEARCH) + tokens(S1_NOTES) + tokens(S2_ANSWER),
        "input_tokens_system2": 2,
        "output_tokens_system2": tokens(S2_SEARCH) + tokens(S2_ANSWER),
        "input_tokens_system1": 1,
        "output_tokens_system1": tokens(S1_NOTES),
        "tool_calls": 5,
        "tool_calls_search": 1,
        "tool_calls_scholar": 0,
        "tool_calls_python": 1,
        "tool_calls_browse": 3,
        "pages_read": 2,
        "papers_read": 0,
        "python_calls": 1,
    }
    assert {name: metrics[name] for name in expected} == pytest.approx(expected)
    assert math.isnan(metrics["cost_usd"])  # mockllm has no price: blank, not zero
    first = log.samples[0].scores["accounting"].value
    assert first["tool_calls_browse"] == 3 and first["pages_read"] == 2


def _episode(*calls: tuple[str, str | None, int, int], tools: tuple[str, ...] = ()) -> Episode:
    episode = Episode(system="x", question="q")
    for index, (role, model, inputs, outputs) in enumerate(calls):
        reply = Reply(text="", model=model, input_tokens=inputs, output_tokens=outputs)
        episode.calls.append(ModelCall(id=index, role=role, messages=[], reply=reply))
    for index, name in enumerate(tools):
        episode.tool_calls.append(ToolCall(id=index, name=name, arguments={}, output="", error=None))
    return episode


def test_cost_uses_the_price_table_and_is_blank_when_any_model_is_unpriced():
    prices = {"gpt-4o": Price(2.5, 10.0), "gpt-4o-mini": Price(0.15, 0.6)}
    priced = _episode(("solver", "openai/gpt-4o-2024-08-06", 1000, 500), ("verifier", "gpt-4o-mini", 2000, 0))
    counts = account(priced, ["solver", "verifier"], [], prices)
    assert counts["cost_usd"] == pytest.approx((1000 * 2.5 + 500 * 10.0 + 2000 * 0.15) / 1e6)
    mixed = _episode(("solver", "gpt-4o", 10, 10), ("verifier", "local/runs/x", 10, 10))
    assert math.isnan(account(mixed, ["solver", "verifier"], [], prices)["cost_usd"])
    assert price_of("openai/gpt-4o-mini", prices) == Price(0.15, 0.6)
    assert price_of("gpt-4o-minis", prices) is None


def test_the_shipped_price_table_loads_and_a_bad_entry_names_the_file_and_key(tmp_path):
    assert load_prices()["gpt-4o"] == Price(2.5, 10.0)
    bad = tmp_path / "prices.yaml"
    bad.write_text("gpt-x: {input: 1}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"prices.yaml: entry 'gpt-x' must be"):
        load_prices(bad)


def test_the_system_solver_writes_the_accounting_score_without_a_scorer_of_its_own(tmp_path):
    task = evaluation_task(get_benchmark("aime2025"), data="samples", limit=2, system="direct")
    (log,) = eval(
        task,
        model=scripted_model(lambda messages, config: "\\boxed{1}"),
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    assert [scorer.name for scorer in log.eval.scorers] == ["math"]
    (accounting,) = [score for score in log.results.scores if score.name == "accounting"]
    assert accounting.metrics["attempts"].value == 2 and accounting.metrics["output_tokens"].value == 2
    for sample in log.samples:
        scorer_spans = [e.name for e in sample.events if isinstance(e, SpanBeginEvent) and e.type == "scorer"]
        assert scorer_spans == ["math"]
        (event,) = [e for e in sample.events if isinstance(e, ScoreEvent) and e.scorer == "accounting"]
        assert event.score.value == sample.scores["accounting"].value
        assert sample.scores["accounting"].value["output_tokens"] == 2  # "\\boxed{1}": 9 characters, 2 tokens


def _attempt(sample_id: int, tokens: float, cost: float, hits: float) -> SampleScore:
    value = {"input_tokens": tokens, "cost_usd": cost, "tool_cache_hit": hits}
    return SampleScore(score=Score(value=value), sample_id=sample_id)


def _same(left: dict, right: dict) -> bool:
    return list(left) == list(right) and all(
        a == b or (math.isnan(a) and math.isnan(b))
        for a, b in zip(left.values(), right.values(), strict=True)
    )


def test_the_accounting_metric_kept_between_calls_equals_a_fresh_count():
    """Inspect recomputes the metric on every attempt so far: the running sums give what a fresh count gives when
    attempts are appended, when one is replaced (a requeued sample) and when another eval's list comes in."""
    scores = [_attempt(0, 10, 0.5, 1), _attempt(1, 30, math.nan, 0)]
    running = per_attempt_means_and_totals()
    first = running(scores)
    assert first["input_tokens"] == 20 and first["cost_usd"] == 0.5 and math.isnan(first["total_cost_usd"])
    assert first["total_tool_cache_hit"] == 1 and first["attempts"] == 2
    scores.append(_attempt(2, 50, 1.5, 2))
    assert _same(running(scores), per_attempt_means_and_totals()(scores))
    assert running(scores)["input_tokens"] == 30
    scores[1] = _attempt(1, 90, 1.0, 0)
    assert _same(running(scores), per_attempt_means_and_totals()(scores))
    assert running(scores)["total_input_tokens"] == 150
    other = [_attempt(0, 7, 0.0, 0)]
    assert running(other)["total_input_tokens"] == 7 and running(other)["attempts"] == 1
