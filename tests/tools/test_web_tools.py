"""Web tools against a scripted HTTP server on 127.0.0.1: Serper, SerpAPI, Google Scholar via SerpAPI, OpenAlex
and browse -- request shapes, rendering, retries on transient failures, the leak blocklist, and errors."""

from __future__ import annotations

import gzip
import json

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import ToolConfigError, build_toolbox, tool_documents
from mara_bench.harness.tools.scholar import abstract_from_inverted_index

KEYS = {"SERPER_API_KEY": "serper-secret", "SERPAPI_API_KEY": "serpapi-secret"}
ARTICLE = """<html><head><title>Everest facts</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | Subscribe to our newsletter</nav>
<article><h1>Mount Everest</h1>
<p>Mount Everest is the highest mountain on Earth, with a summit 8,849 metres above sea level. It lies in the
Mahalangur Himal range on the border between Nepal and China.</p>
<p>The first confirmed ascent was made in 1953 by Tenzing Norgay and Edmund Hillary, who reached the summit by
the southeast ridge route that climbers still use today.</p></article>
<footer>Copyright 2024 Example Media. All rights reserved. Cookie settings.</footer></body></html>"""


def toolbox(web, names, **settings):
    defaults = {
        "environ": KEYS,
        "serper_url": f"{web.url}/serper",
        "serpapi_url": f"{web.url}/serpapi",
        "openalex_url": f"{web.url}/openalex",
        "http_backoff": 0,
        "http_attempts": 3,
        "http_timeout": 5,
        "browse_allow_private": True,  # the fake web server is on 127.0.0.1
    }
    return build_toolbox(names, **{**defaults, **settings})


def organic(*links):
    return [
        {"title": f"Page {i}", "link": link, "snippet": f"snippet {i}"} for i, link in enumerate(links, 1)
    ]


async def test_serper_posts_the_query_with_the_key_and_renders_numbered_results(web):
    web.route("/serper", web.reply(body={"organic": organic("https://a.example/1", "https://b.example/2")}))
    output = await toolbox(web, ["search"], search_backend="serper", k=2).call(
        "search", query="everest height"
    )
    [seen] = web.requests
    assert seen.method == "POST"
    assert seen.headers["X-API-KEY"] == "serper-secret"
    assert json.loads(seen.body) == {"q": "everest height", "num": 2}
    assert output == (
        'Results for "everest height":\n\n'
        "[1] Page 1\nURL: https://a.example/1\nsnippet 1\n\n"
        "[2] Page 2\nURL: https://b.example/2\nsnippet 2"
    )
    assert tool_documents(output) == [
        "[1] Page 1\nURL: https://a.example/1\nsnippet 1",
        "[2] Page 2\nURL: https://b.example/2\nsnippet 2",
    ]


async def test_serpapi_search_sends_engine_key_and_num_and_filters_the_blocklist(web):
    links = (
        "https://huggingface.co/datasets/cais/hle",
        "https://www.chegg.com/homework-help/q1",
        "https://en.wikipedia.org/wiki/Everest",
        "https://huggingface.co/Qwen/Qwen3-8B",
    )
    web.route("/serpapi", web.reply(body={"organic_results": organic(*links)}))
    output = await toolbox(web, ["search"], search_backend="serpapi", k=4).call("search", query="hle answers")
    [seen] = web.requests
    assert seen.query == {
        "engine": ["google"],
        "q": ["hle answers"],
        "num": ["4"],
        "api_key": ["serpapi-secret"],
    }
    assert [doc.splitlines()[1] for doc in tool_documents(output)] == [
        "URL: https://en.wikipedia.org/wiki/Everest",
        "URL: https://huggingface.co/Qwen/Qwen3-8B",
    ]
    assert "chegg" not in output and "datasets" not in output


def openalex_works(*links):
    return {
        "results": [
            {"display_name": f"Paper {i}", "primary_location": {"landing_page_url": link}}
            for i, link in enumerate(links, 1)
        ]
    }


SEARCH_SERVICES = {  # name -> (tool, settings, path on the fake server, body listing result links)
    "serper": (
        "search",
        {"search_backend": "serper"},
        "/serper",
        lambda *links: {"organic": organic(*links)},
    ),
    "serpapi": (
        "search",
        {"search_backend": "serpapi"},
        "/serpapi",
        lambda *links: {"organic_results": organic(*links)},
    ),
    "scholar-serpapi": (
        "scholar",
        {"scholar_backend": "serpapi"},
        "/serpapi",
        lambda *links: {"organic_results": organic(*links)},
    ),
    "scholar-openalex": ("scholar", {"scholar_backend": "openalex"}, "/openalex", openalex_works),
}


@pytest.mark.parametrize("service", SEARCH_SERVICES)
async def test_every_search_service_drops_blocklisted_results(web, service):
    tool, settings, path, body = SEARCH_SERVICES[service]
    links = (
        "https://huggingface.co/datasets/google/frames-benchmark",
        "https://en.wikipedia.org/wiki/Everest",
        "https://www.coursehero.com/file/123/answers",
        "https://www.kaggle.com/datasets/x/hle",
        "https://arxiv.org/abs/2510.04935",
    )
    web.route(path, web.reply(body=body(*links)))
    output = await toolbox(web, [tool], **settings).call(tool, query="everest")
    assert [doc.splitlines()[1] for doc in tool_documents(output)] == [
        "URL: https://en.wikipedia.org/wiki/Everest",
        "URL: https://arxiv.org/abs/2510.04935",
    ]
    assert [doc.splitlines()[0][:4] for doc in tool_documents(output)] == ["[1] ", "[2] "]  # renumbered
    for blocked in ("huggingface", "coursehero", "kaggle"):
        assert blocked not in output


@pytest.mark.parametrize("service", [*SEARCH_SERVICES, "browse"])
async def test_every_web_service_retries_a_transient_failure(web, service):
    if service == "browse":
        tool, settings, path, url = "browse", {}, "/page", f"{web.url}/page"
        good, arguments = web.reply(body="page text", content_type="text/plain"), {"url": url}
    else:
        tool, settings, path, body = SEARCH_SERVICES[service]
        url = "https://a.example/"
        good, arguments = web.reply(body=body(url)), {"query": "q"}
    web.route(path, web.reply(502, "bad gateway", "text/plain"), good)
    output = await toolbox(web, [tool], **settings).call(tool, **arguments)
    assert len(web.hits(path)) == 2
    assert f"URL: {url}" in tool_documents(output)[0].splitlines()


async def test_a_timeout_is_retried_and_a_persistent_one_is_a_tool_error(web):
    slow = web.reply(body="late", content_type="text/plain", delay=1.0)
    web.route("/slow-once", slow, web.reply(body="on time", content_type="text/plain"))
    box = toolbox(web, ["browse"], http_timeout=0.3, http_attempts=2)
    assert await box.call("browse", url=f"{web.url}/slow-once") == f"URL: {web.url}/slow-once\n\non time"
    assert len(web.hits("/slow-once")) == 2
    web.route("/always-slow", slow)
    with pytest.raises(ToolError) as caught:
        await box.call("browse", url=f"{web.url}/always-slow?token=secret")
    assert str(caught.value) == f"browse: no answer from {web.url}/always-slow within 0.3 s (2 attempts)"
    assert len(web.hits("/always-slow")) == 2


async def test_several_queries_in_one_call_are_numbered_across_and_deduplicated(web):
    first = web.reply(body={"organic": organic("https://a.example/", "https://shared.example/")})
    second = web.reply(body={"organic": organic("https://shared.example/", "https://c.example/")})
    # The queries run concurrently, so the reply is chosen by the query, not by arrival order.
    web.route_by("/serper", lambda seen: first if b'"first"' in seen.body else second)
    output = await toolbox(web, ["search"], search_backend="serper").call("search", query=["first", "second"])
    assert [doc.split("\n")[0:2] for doc in tool_documents(output)] == [
        ["[1] Page 1", "URL: https://a.example/"],
        ["[2] Page 2", "URL: https://shared.example/"],
        ["[3] Page 2", "URL: https://c.example/"],
    ]
    assert output.index('Results for "first"') < output.index('Results for "second"')


async def test_transient_503_is_retried_then_succeeds(web):
    web.route(
        "/serper",
        web.reply(503, "busy"),
        web.reply(429, "slow down"),
        web.reply(body={"organic": organic("https://a.example/")}),
    )
    output = await toolbox(web, ["search"], search_backend="serper").call("search", query="q")
    assert len(web.hits("/serper")) == 3
    assert tool_documents(output) == ["[1] Page 1\nURL: https://a.example/\nsnippet 1"]


async def test_persistent_503_becomes_a_tool_error_after_the_attempts(web):
    web.route("/serpapi", web.reply(503, "down"))
    box = toolbox(web, ["search"], search_backend="serpapi", http_attempts=2)
    with pytest.raises(ToolError) as caught:
        await box.call("search", query="q")
    assert str(caught.value) == f"serpapi search: HTTP 503 from {web.url}/serpapi after 2 attempts"
    assert "serpapi-secret" not in str(caught.value)
    assert len(web.hits("/serpapi")) == 2


async def test_forbidden_is_not_retried_and_hints_at_the_key(web):
    web.route("/serper", web.reply(403, "bad key", "text/plain"))
    with pytest.raises(ToolError, match=r"serper search: HTTP 403 Forbidden .*\(check the API key\)"):
        await toolbox(web, ["search"], search_backend="serper").call("search", query="q")
    assert len(web.hits("/serper")) == 1


async def test_one_failing_query_does_not_hide_the_others(web):
    good, bad = (
        web.reply(body={"organic": organic("https://a.example/")}),
        web.reply(400, "bad", "text/plain"),
    )
    web.route_by("/serper", lambda seen: bad if b'"bad"' in seen.body else good)
    box = toolbox(web, ["search"], search_backend="serper", http_attempts=1)
    output = await box.call("search", query=["good", "bad"])
    assert tool_documents(output) == ["[1] Page 1\nURL: https://a.example/\nsnippet 1"]
    assert '"bad":\n\n(this query failed: serper search: HTTP 400 Bad Request' in output


async def test_serpapi_no_results_is_an_empty_answer_and_other_errors_fail(web):
    web.route(
        "/serpapi",
        web.reply(body={"error": "Google hasn't returned any results for this query."}),
        web.reply(
            body={"error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}
        ),
    )
    box = toolbox(web, ["search"], search_backend="serpapi")
    output = await box.call("search", query="nothing")
    assert output == 'Results for "nothing":\n\n(no results)'
    assert tool_documents(output) == []
    with pytest.raises(ToolError, match="serpapi search: Invalid API key"):
        await box.call("search", query="again")


async def test_scholar_through_serpapi(web):
    paper = {
        "title": "Attention Is All You Need",
        "link": "https://arxiv.org/abs/1706.03762",
        "snippet": "The dominant sequence transduction models ...",
        "publication_info": {"summary": "A Vaswani, N Shazeer - NeurIPS, 2017"},
        "inline_links": {"cited_by": {"total": 100000}},
    }
    web.route("/serpapi", web.reply(body={"organic_results": [paper]}))
    output = await toolbox(web, ["scholar"], scholar_backend="serpapi").call("scholar", query="transformer")
    assert web.requests[0].query["engine"] == ["google_scholar"]
    assert web.requests[0].query["num"] == ["5"]
    assert tool_documents(output) == [
        "[1] Attention Is All You Need\nURL: https://arxiv.org/abs/1706.03762\n"
        "A Vaswani, N Shazeer - NeurIPS, 2017 · cited by 100000\nThe dominant sequence transduction models ..."
    ]


async def test_scholar_through_openalex_rebuilds_the_abstract(web):
    work = {
        "display_name": "Deep residual learning",
        "doi": "https://doi.org/10.1109/cvpr.2016.90",
        "publication_year": 2016,
        "cited_by_count": 200000,
        "authorships": [{"author": {"display_name": "Kaiming He"}}, {"author": {"display_name": "Jian Sun"}}],
        "primary_location": {"source": {"display_name": "CVPR"}, "landing_page_url": "https://x.example/"},
        "abstract_inverted_index": {
            "Deeper": [0],
            "networks": [1, 5],
            "are": [2],
            "hard": [3],
            "train;": [4],
        },
    }
    web.route("/openalex", web.reply(body={"results": [work]}))
    output = await toolbox(web, ["scholar"], scholar_k=3).call("scholar", query="resnet")
    assert web.requests[0].query == {"search": ["resnet"], "per-page": ["3"]}
    assert tool_documents(output) == [
        "[1] Deep residual learning\nURL: https://doi.org/10.1109/cvpr.2016.90\n"
        "Kaiming He, Jian Sun · 2016 · CVPR · cited by 200000\nDeeper networks are hard train; networks"
    ]


def test_abstract_from_inverted_index():
    assert abstract_from_inverted_index({"b": [1], "a": [0, 2]}) == "a b a"
    assert abstract_from_inverted_index(None) == ""


async def test_browse_extracts_the_main_text(web):
    web.route("/everest", web.reply(body=ARTICLE, content_type="text/html; charset=utf-8"))
    output = await toolbox(web, ["browse"]).call("browse", url=f"{web.url}/everest")
    assert output.startswith(f"Title: Mount Everest\nURL: {web.url}/everest\n\n")
    assert "highest mountain on Earth" in output and "Tenzing Norgay and Edmund Hillary" in output
    assert "Subscribe to our newsletter" not in output and "Cookie settings" not in output
    assert tool_documents(output) == [str(output)]


async def test_browse_reads_a_gzip_encoded_page_within_the_byte_limit(web):
    text = "Sagarmatha " * 200
    body = gzip.compress(text.encode())
    web.route(
        "/zipped",
        web.reply(body=body, content_type="text/plain; charset=utf-8", headers={"Content-Encoding": "gzip"}),
    )
    # The limit counts decoded bytes: the 2,200-byte text passes at 2,200 and fails at 2,199.
    output = await toolbox(web, ["browse"], browse_max_bytes=len(text)).call(
        "browse", url=f"{web.url}/zipped"
    )
    assert output == f"URL: {web.url}/zipped\n\n{text.strip()}"
    with pytest.raises(ToolError, match="over the limit of 2,199 bytes"):
        await toolbox(web, ["browse"], browse_max_bytes=len(text) - 1).call("browse", url=f"{web.url}/zipped")


ZH_PARAGRAPH = (
    "珠穆朗玛峰是地球上海拔最高的山峰，位于中国与尼泊尔边界的喜马拉雅山脉，峰顶海拔八千八百四十九米。" * 3
)
RU_PARAGRAPH = (
    "Джомолунгма — высочайшая вершина Земли, её высота над уровнем моря составляет 8849 метров. " * 3
)


@pytest.mark.parametrize(
    ("declaration", "codec", "paragraph"),
    [
        ('<meta charset="gbk">', "gbk", ZH_PARAGRAPH),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">',
            "cp1251",
            RU_PARAGRAPH,
        ),
    ],
)
async def test_browse_decodes_a_page_by_its_meta_charset(web, declaration, codec, paragraph):
    page = f"<html><head>{declaration}<title>t</title></head><body><article><p>{paragraph}</p></article></body></html>"
    # No charset in the HTTP header: only the page itself says how it is encoded.
    web.route("/page", web.reply(body=page.encode(codec), content_type="text/html"))
    output = await toolbox(web, ["browse"]).call("browse", url=f"{web.url}/page")
    assert paragraph.strip() in output and "\ufffd" not in output


async def test_browse_prefers_the_http_charset_and_survives_an_unknown_meta_charset(web):
    body = (
        f"<html><head><meta charset='gbk'></head><body><article><p>{RU_PARAGRAPH}</p></article></body></html>"
    )
    web.route(
        "/header", web.reply(body=body.encode("cp1251"), content_type="text/html; charset=windows-1251")
    )
    assert RU_PARAGRAPH.strip() in await toolbox(web, ["browse"]).call("browse", url=f"{web.url}/header")
    unknown = body.replace("gbk", "no-such-codec").replace(RU_PARAGRAPH, "Everest is 8,849 metres high. " * 5)
    web.route("/unknown", web.reply(body=unknown.encode(), content_type="text/html"))
    assert "Everest is 8,849 metres high." in await toolbox(web, ["browse"]).call(
        "browse", url=f"{web.url}/unknown"
    )


async def test_browse_caps_long_pages_and_reads_plain_text(web):
    web.route("/notes.txt", web.reply(body="0123456789" * 10, content_type="text/plain"))
    output = await toolbox(web, ["browse"], browse_max_chars=15).call("browse", url=f"{web.url}/notes.txt")
    assert (
        output
        == f"URL: {web.url}/notes.txt\n\n012345678901234\n[page cut at 15 characters (browse_max_chars)]"
    )


async def test_browse_refuses_blocked_pages_before_and_after_redirects(web):
    box = toolbox(web, ["browse"], blocklist=["127.0.0.1/secret", "huggingface.co/datasets"])
    with pytest.raises(ToolError, match="on the leak blocklist"):
        await box.call("browse", url="https://huggingface.co/datasets/cais/hle/viewer")
    assert web.requests == []  # refused without fetching
    web.route("/jump", web.reply(302, "", "text/plain", headers={"Location": "/secret/answers"}))
    web.route("/secret/answers", web.reply(body="the answers", content_type="text/plain"))
    with pytest.raises(ToolError, match=f"{web.url}/secret/answers is on the leak blocklist"):
        await box.call("browse", url=f"{web.url}/jump")


async def test_browse_errors(web):
    web.route("/empty", web.reply(body="<html><body></body></html>", content_type="text/html"))
    box = toolbox(web, ["browse"], http_attempts=1)
    with pytest.raises(ToolError, match="no readable main text"):
        await box.call("browse", url=f"{web.url}/empty")
    with pytest.raises(ToolError, match="HTTP 404 Not Found"):
        await box.call("browse", url=f"{web.url}/missing")
    with pytest.raises(ToolError, match="must be an http\\(s\\) URL"):
        await box.call("browse", url="file:///etc/passwd")


async def test_unreachable_host_is_a_tool_error(web):
    box = toolbox(web, ["browse"], http_attempts=2)
    web.server.server_close()  # nothing listens on the port any more
    with pytest.raises(ToolError, match="browse: cannot reach"):
        await box.call("browse", url=f"{web.url}/gone")


async def test_api_keys_are_read_from_the_process_environment(web, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "from-the-environment")
    web.route("/serper", web.reply(body={"organic": organic("https://a.example/")}))
    box = build_toolbox(["search"], search_backend="serper", serper_url=f"{web.url}/serper", http_backoff=0)
    await box.call("search", query="q")
    assert web.requests[0].headers["X-API-KEY"] == "from-the-environment"


def test_missing_api_keys_fail_at_build_time_naming_the_variable(web):
    with pytest.raises(
        ToolConfigError, match="search_backend=serper needs SERPER_API_KEY.*-T search_backend="
    ):
        build_toolbox(["search"], search_backend="serper", environ={})
    with pytest.raises(ToolConfigError, match="scholar_backend=serpapi needs SERPAPI_API_KEY"):
        build_toolbox(["scholar"], scholar_backend="serpapi", environ={})
    assert build_toolbox(["scholar", "browse"], environ={}).names() == ["browse", "scholar"]  # keyless
