"""Hard bounds on the web tools against hostile servers on 127.0.0.1 (issue 23, item 3): a compressed bomb is
stopped while it inflates, a drip-feeding server is cut off by the call's deadline, page reading runs in a
killable worker process off the event loop, and an API key never follows a redirect to another host."""

from __future__ import annotations

import asyncio
import gzip
import time
import tracemalloc

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import build_toolbox
from mara_bench.harness.tools.decoding import BoundedDecoder, DecodedTooLarge, UnsupportedEncoding
from mara_bench.harness.tools.page_worker import Page, read_in_worker

KEY = "serper-secret"
SERPER_REPLY = {
    "organic": [{"title": "Everest", "link": "https://example.org/everest", "snippet": "8,849 m"}]
}
LIMIT = 1_000_000
BOMB_SIZE = 200 * LIMIT
"""Decoded size of the bomb: 200 MB of zeros, under 1 kB twice gzipped."""


def toolbox(web, names, **settings):
    defaults = {
        "environ": {"SERPER_API_KEY": KEY},
        "search_backend": "serper",
        "serper_url": f"{web.url}/serper",
        "http_backoff": 0,
        "http_attempts": 1,
        "http_timeout": 5,
        "browse_allow_private": True,  # the fake servers are on 127.0.0.1
    }
    return build_toolbox(names, **{**defaults, **settings})


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return gzip.compress(gzip.compress(bytes(BOMB_SIZE), 9), 9)


async def test_a_double_gzip_bomb_is_stopped_while_it_inflates(web, bomb):
    web.route(
        "/bomb",
        web.reply(body=bomb, content_type="text/html", headers={"Content-Encoding": "gzip, gzip"}),
    )
    tools = toolbox(web, ["browse"], browse_max_bytes=LIMIT)
    tracemalloc.start()
    try:
        with pytest.raises(ToolError, match=r"over the limit of 1,000,000 bytes \(browse_max_bytes\)"):
            await tools.call("browse", url=f"{web.url}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Decoding whole chunks held the 200 MB; bounded decoding never holds more than a few times the limit.
    assert peak < 8 * LIMIT


def test_the_decoder_caps_every_layer_and_refuses_unknown_encodings(bomb):
    decoder = BoundedDecoder("gzip, gzip", LIMIT)
    with pytest.raises(DecodedTooLarge):
        decoder.feed(bomb)
    text = b"Sagarmatha " * 1000
    exact = BoundedDecoder("gzip,gzip", len(text))
    wrapped = gzip.compress(gzip.compress(text))
    assert exact.feed(wrapped[:100]) + exact.feed(wrapped[100:]) + exact.flush() == text
    with pytest.raises(UnsupportedEncoding, match="br"):
        BoundedDecoder("gzip, br", LIMIT)


async def test_a_corrupt_or_unsupported_encoding_is_a_tool_error(web):
    web.route("/corrupt", web.reply(body=b"not gzip at all", headers={"Content-Encoding": "gzip"}))
    web.route("/brotli", web.reply(body=b"\x8b\x02\x80", headers={"Content-Encoding": "br"}))
    with pytest.raises(ToolError, match="its compressed body is corrupt"):
        await toolbox(web, ["browse"]).call("browse", url=f"{web.url}/corrupt")
    with pytest.raises(ToolError, match="Content-Encoding br, which is not read"):
        await toolbox(web, ["browse"]).call("browse", url=f"{web.url}/brotli")


@pytest.mark.parametrize("tool", ["browse", "search"])
async def test_a_drip_fed_answer_is_cut_off_at_the_call_deadline(web, tool):
    # 60 bytes, one every 0.1 s: each read is well within http_timeout, the whole answer is not within 1 s.
    body = '{"organic": [], "padding": "' + "x" * 30 + '"}'
    web.route("/serper", web.reply(body=body, drip=0.1))
    web.route("/drip", web.reply(body=body, content_type="text/plain", drip=0.1))
    arguments = {"url": f"{web.url}/drip"} if tool == "browse" else {"query": "everest"}
    with pytest.raises(ToolError, match=r"within the deadline of 1 s \(web_deadline\)"):
        await toolbox(web, [tool], web_deadline=1).call(tool, **arguments)


async def test_page_reading_runs_in_a_worker_while_the_event_loop_goes_on():
    ticks = []

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.001)
            ticks.append(1)

    html = (
        "<html><body><article>"
        + "<p>Everest is the highest mountain.</p>" * 20000
        + "</article></body></html>"
    )
    page = Page("text/html", html.encode(), "utf-8", "https://example.org/everest", 100)
    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    before = len(ticks)
    title, text = await read_in_worker(page, seconds=300)
    during = len(ticks) - before
    ticker.cancel()
    assert text.startswith("Everest is the highest mountain.") and "(browse_max_chars)" in text
    # Parsing 800 kB of HTML takes far longer than a few ms; on the event loop the ticker could not run meanwhile.
    assert during >= 5


async def test_a_page_reader_that_fails_is_a_tool_error():
    page = Page("image/png", b"\x89PNG", None, "https://example.org/x.png", 100)
    with pytest.raises(ToolError, match="x.png is image/png, which cannot be read as text"):
        await read_in_worker(page, seconds=300)


async def test_a_slow_page_read_is_a_tool_error_naming_the_setting(web):
    page = "<html><body>" + "<div><p>Everest is the highest mountain.</p></div>" * 20000 + "</body></html>"
    web.route("/huge", web.reply(body=page, content_type="text/html"))
    with pytest.raises(ToolError, match=r"took over 0.001 s \(browse_extract_seconds\)"):
        await toolbox(web, ["browse"], browse_extract_seconds=0.001).call("browse", url=f"{web.url}/huge")


async def test_an_api_key_never_follows_a_redirect_to_another_host(web, other_web):
    web.route("/serper", web.reply(307, "", "text/plain", headers={"Location": f"{other_web.url}/serper"}))
    other_web.route("/serper", web.reply(body=SERPER_REPLY))
    output = await toolbox(web, ["search"]).call("search", query="everest")
    assert "https://example.org/everest" in output
    (seen,) = other_web.hits("/serper")
    assert KEY not in str(seen.headers) and {k.lower() for k in seen.headers}.isdisjoint({"x-api-key"})
    assert b"everest" in seen.body  # a 307 keeps the POST and its body, only the key stays home


async def test_an_api_key_follows_a_redirect_on_the_same_host(web):
    web.route("/serper", web.reply(308, "", "text/plain", headers={"Location": "/v2/serper"}))
    web.route("/v2/serper", web.reply(body=SERPER_REPLY))
    assert "https://example.org/everest" in await toolbox(web, ["search"]).call("search", query="everest")
    assert web.hits("/v2/serper")[0].headers["X-API-KEY"] == KEY


@pytest.mark.parametrize("status", [302, 307])
async def test_a_search_endpoint_redirect_is_checked_like_a_browse_hop_and_named(web, status):
    metadata = "http://169.254.169.254/latest/meta-data/"
    web.route("/serper", web.reply(status, "", "text/plain", headers={"Location": metadata}))
    search = toolbox(
        web, ["search"], browse_allow_private=False
    )  # the endpoint itself is the operator's choice
    with pytest.raises(
        ToolError, match=r"serper search: will not fetch http://169.254.169.254/latest/"
    ) as caught:
        await search.call("search", query="everest")
    assert "API key" not in str(caught.value) and "metadata" in str(caught.value)


async def test_a_scholar_endpoint_redirect_to_another_private_origin_is_refused(web, other_web):
    web.route("/openalex", web.reply(302, "", "text/plain", headers={"Location": f"{other_web.url}/works"}))
    scholar = toolbox(web, ["scholar"], openalex_url=f"{web.url}/openalex", browse_allow_private=False)
    with pytest.raises(ToolError, match=r"openalex scholar: will not fetch http://\S+/works: .*loopback"):
        await scholar.call("scholar", query="everest")
    assert not other_web.requests


class SlowStartingWorker:
    """A page reader that takes a second to start and reads at once (what a loaded machine does to a real one)."""

    started = 0

    def __init__(self):
        self.process = type("Alive", (), {"poll": lambda self: None, "returncode": None})()

    def wait_started(self):
        time.sleep(1.0)
        SlowStartingWorker.started += 1

    def read(self, page):
        return {"ok": True, "title": "", "text": page.body.decode()}

    def kill(self):
        pass


async def test_a_page_readers_start_up_is_not_counted_in_the_extract_deadline(monkeypatch):
    from mara_bench.harness.tools import page_worker

    monkeypatch.setattr(page_worker, "_Worker", SlowStartingWorker)
    monkeypatch.setattr(page_worker, "_idle", [])
    pages = [Page("text/plain", f"page {i}".encode(), None, "http://a/", 100) for i in range(8)]
    read = await asyncio.gather(*(read_in_worker(page, seconds=0.2) for page in pages))
    assert [text for _, text in read] == [f"page {i}" for i in range(8)]
    assert SlowStartingWorker.started == 8


async def test_building_browse_starts_page_readers_before_the_first_call(web, monkeypatch):
    from mara_bench.harness.tools import page_worker

    monkeypatch.setattr(page_worker, "_Worker", SlowStartingWorker)
    monkeypatch.setattr(page_worker, "_idle", [])
    toolbox(web, ["browse"])
    assert len(page_worker._idle) == page_worker.MAX_IDLE
