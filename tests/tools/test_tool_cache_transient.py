"""Record only what would be the same tomorrow: a night whose search hit HTTP 429 (or 5xx, a timeout, an answer that
is not JSON) records the rest but not that call, counted as ``tool_cache_error``; replaying the night reports a miss
for it, not the 429, and replay-or-record tries it live again. A call whose queries partly failed so is not
recorded either. Keys keep apart what the tool keeps apart (URLs, sandbox modes, private addresses, indexes)."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from mara_bench.core.episodes import ToolError, TransientToolError
from mara_bench.harness.toolbase.settings import ToolConfigError, ToolSettings
from mara_bench.harness.toolcache.keys import canonical_url, normalised
from mara_bench.harness.toolcache.variants import tool_variant
from mara_bench.harness.tools import build_toolbox


def run(coroutine):
    return asyncio.run(coroutine)


def night(web, tmp_path, mode: str):
    return build_toolbox(
        ["search"],
        search_backend="serper",
        serper_url=f"{web.url}/search",
        http_attempts=1,
        http_timeout=2,
        tool_cache=mode,
        tool_snapshot="night",
        tool_store=str(tmp_path / "store"),
        environ={"SERPER_API_KEY": "test-key"},
    )


def found(title: str):
    return {"organic": [{"title": title, "link": f"http://example.org/{title}", "snippet": "s"}]}


@pytest.mark.parametrize(
    "failure",
    [
        {"status": 429, "body": "slow down"},
        {"status": 503, "body": "busy"},
        {"status": 200, "body": "<html>not json</html>", "content_type": "text/html"},
        {"status": 200, "body": found("late"), "delay": 4.0},
    ],
    ids=["429", "503", "not-json", "timeout"],
)
def test_a_transient_failure_is_never_recorded_and_replays_as_a_miss(web, tmp_path, failure):
    def answer(seen):
        query = json.loads(seen.body)["q"]
        return web.reply(**failure) if query == "flaky" else web.reply(body=found(query))

    web.route_by("/search", answer)
    recorded = night(web, tmp_path, "record")
    assert "steady" in run(recorded.call("search", query="steady"))
    with pytest.raises(TransientToolError):
        run(recorded.call("search", query="flaky"))
    counts = recorded.cache.counts
    assert (counts.live, counts.record, counts.error) == (2, 1, 1)

    replay = night(web, tmp_path, "replay")
    assert "steady" in run(replay.call("search", query="steady"))
    with pytest.raises(ToolError, match="tool cache miss: snapshot 'night' has no recorded search") as caught:
        run(replay.call("search", query="flaky"))
    assert "429" not in str(caught.value) and "503" not in str(caught.value)

    web.route_by("/search", lambda seen: web.reply(body=found(json.loads(seen.body)["q"])))
    retried = night(web, tmp_path, "replay-or-record")
    assert "flaky" in run(retried.call("search", query="flaky"))
    assert (retried.cache.counts.hit, retried.cache.counts.live, retried.cache.counts.record) == (0, 1, 1)


def test_a_call_whose_queries_partly_hit_429_is_answered_but_not_recorded(web, tmp_path):
    def answer(seen):
        query = json.loads(seen.body)["q"]
        return web.reply(status=429) if query == "flaky" else web.reply(body=found(query))

    web.route_by("/search", answer)
    recorded = night(web, tmp_path, "record")
    text = run(recorded.call("search", query=["steady", "flaky"]))
    assert "steady" in text and "this query failed" in text
    assert (recorded.cache.counts.record, recorded.cache.counts.error) == (0, 1)


def test_a_permanent_failure_is_recorded_and_replayed(web, tmp_path):
    web.route("/search", web.reply(status=404, body="gone"))
    with pytest.raises(ToolError, match="HTTP 404") as live:
        run(night(web, tmp_path, "record").call("search", query="q"))
    assert not isinstance(live.value, TransientToolError)
    with pytest.raises(ToolError, match="HTTP 404"):
        run(night(web, tmp_path, "replay").call("search", query="q"))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("http://a.org/x\ty", "http://a.org/x y"),
        ("http://a.org/x\x1fy", "http://a.org/x y"),
        ("http://a.org/x\u2028y", "http://a.org/x y"),
        ("http://a.org/x\xa0y", "http://a.org/x y"),
        ("http://a.org/x\u3000y", "http://a.org/x y"),
        ("http://a.org/?q=a  b", "http://a.org/?q=a b"),
        ("http://a.org/A", "http://a.org/a"),
    ],
)
def test_distinct_urls_get_distinct_keys(one, other):
    assert canonical_url(one) != canonical_url(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("  http://a.org/x#part", "http://a.org/x"),
        ("HTTP://A.ORG/x", "http://a.org/x"),
        ("http://a.org/x y", "http://a.org/x%20y"),
        ("http://User:pw@A.org/x", "http://User:pw@a.org/x"),
    ],
)
def test_urls_the_tool_fetches_alike_share_a_key(one, other):
    assert canonical_url(one) == canonical_url(other)


def test_queries_collapse_ascii_blanks_only():
    assert normalised("query", " a \t b\n") == "a b"
    assert normalised("query", "a\u3000b") != normalised("query", "a b")
    assert normalised("code", " x = 1 ") == " x = 1 "


def test_the_key_holds_sandbox_mode_private_addresses_and_the_index_content(tmp_path, bm25_index):
    base = ToolSettings()
    assert tool_variant("python", base) != tool_variant("python", ToolSettings(python_sandbox="unisolated"))
    assert tool_variant("browse", base) != tool_variant("browse", ToolSettings(browse_allow_private=True))
    moved = tmp_path / "elsewhere" / "other-name"
    shutil.copytree(bm25_index, moved)
    here = tool_variant("retrieve", ToolSettings(index=str(bm25_index)))
    assert here == tool_variant("retrieve", ToolSettings(index=str(moved)))  # same content, other folder
    (moved / "manifest.json").write_text((moved / "manifest.json").read_text().replace("bm25", "bm25 "))
    assert here != tool_variant("retrieve", ToolSettings(index=str(moved)))
    with pytest.raises(ToolConfigError, match="identifies the index"):
        tool_variant("retrieve", ToolSettings(index=str(tmp_path / "absent")))
