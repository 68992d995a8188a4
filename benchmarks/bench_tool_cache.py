"""Per-call cost of the tool cache: a replayed (and a recorded) web tool call vs the same call to a live server.

A local HTTP server on 127.0.0.1 answers Serper-style searches and serves pages; the toolbox is the real one
(``search`` with ``search_backend=serper`` and ``browse``), built three ways: ``tool_cache=off`` (the baseline: every
call goes to the server), ``replay`` over a snapshot recorded once beforehand, and ``record`` into a fresh snapshot
each round. Each side makes the same ``CALLS`` calls (a search and a page read per query) per round, in ``ROUNDS``
interleaved pairs (``benchmarks/_pairs.py``); the per-pair ratios of time per call, min/median/max, are reported in
``extra_info`` and printed, never asserted. A loopback server answers in well under a millisecond, so ``replay /
live`` here is an upper bound: against the real web (hundreds of ms per call) replay's share is far smaller.
Run: ``.venv/bin/pytest benchmarks/bench_tool_cache.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _pairs import Spread, interleaved_pairs, ratio_spread

from mara_bench.core.episodes import Toolbox
from mara_bench.harness.tools import build_toolbox

QUERIES = 10
CALLS = 2 * QUERIES
"""Calls per side per round: one search and one page read per query."""
ROUNDS = 5


class _Web(BaseHTTPRequestHandler):
    """``POST /search`` -> one organic result linking to ``/page/<query>``; ``GET /page/...`` -> plain text."""

    def do_POST(self) -> None:  # noqa: N802
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["q"]
        port = self.server.server_address[1]
        link = f"http://127.0.0.1:{port}/page/{query.replace(' ', '-')}"
        self._send(
            "application/json", json.dumps({"organic": [{"title": query, "link": link, "snippet": "s"}]})
        )

    def do_GET(self) -> None:  # noqa: N802
        self._send("text/plain", f"The page about {self.path}. " * 40)

    def _send(self, content_type: str, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Web)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _toolbox(url: str, store: Path, mode: str, snapshot: str) -> Toolbox:
    return build_toolbox(
        ["search", "browse"],
        search_backend="serper",
        serper_url=f"{url}/search",
        browse_allow_private=True,
        tool_cache=mode,
        tool_snapshot=snapshot,
        tool_store=str(store),
        environ={"SERPER_API_KEY": "bench"},
    )


def _per_call(toolbox: Toolbox, url: str) -> float:
    """Seconds per call of one round: each query searched, then its result's page read, one after another."""

    async def calls() -> None:
        for index in range(QUERIES):
            await toolbox.call("search", query=f"query {index}")
            await toolbox.call("browse", url=f"{url}/page/query-{index}")

    start = time.perf_counter()
    asyncio.run(calls())
    return (time.perf_counter() - start) / CALLS


def _spread(spread: Spread) -> str:
    return f"{spread.min:.4f}/{spread.median:.4f}/{spread.max:.4f}"


def test_replay_and_record_vs_a_live_local_server_per_call(benchmark, server, tmp_path):
    store = tmp_path / "store"
    live = _toolbox(server, store, "off", "unused")
    _per_call(_toolbox(server, store, "record", "recorded"), server)  # the snapshot replay reads
    replay = _toolbox(server, store, "replay", "recorded")
    for warm in (live, replay):
        _per_call(warm, server)
    rounds = iter(range(ROUNDS))

    def record_round() -> float:
        return _per_call(_toolbox(server, store, "record", f"round-{next(rounds)}"), server)

    def measure() -> tuple[list, list]:
        replayed = interleaved_pairs(
            lambda: _per_call(replay, server), lambda: _per_call(live, server), ROUNDS
        )
        recorded = interleaved_pairs(record_round, lambda: _per_call(live, server), ROUNDS)
        return replayed, recorded

    replayed, recorded = benchmark.pedantic(measure, rounds=1, iterations=1)
    assert replay.cache.counts.live == 0 and replay.cache.counts.miss == 0
    replay_ratio = ratio_spread(replayed, lambda pair: pair.ours / pair.baseline)
    record_ratio = ratio_spread(recorded, lambda pair: pair.ours / pair.baseline)
    live_ms = sorted(pair.baseline * 1e3 for pair in replayed)[ROUNDS // 2]
    replay_ms = sorted(pair.ours * 1e3 for pair in replayed)[ROUNDS // 2]
    record_ms = sorted(pair.ours * 1e3 for pair in recorded)[ROUNDS // 2]
    benchmark.extra_info.update(
        live_ms_per_call_median=live_ms,
        replay_ms_per_call_median=replay_ms,
        record_ms_per_call_median=record_ms,
        replay_over_live=replay_ratio.as_dict(),
        record_over_live=record_ratio.as_dict(),
    )
    print(
        f"\nper call, medians: live {live_ms:.2f} ms, replay {replay_ms:.2f} ms, record {record_ms:.2f} ms; "
        f"replay/live per pair min/median/max {_spread(replay_ratio)}; record/live {_spread(record_ratio)} "
        f"({ROUNDS} interleaved pairs of {CALLS} calls)"
    )
