"""Web search backends: Serper (``SERPER_API_KEY``) and SerpAPI (``SERPAPI_API_KEY``), Google results.

Each backend answers one query with up to ``k`` organic results as ``Hit``s (title, URL, snippet). Answers are
checked against their shape (``mara_bench.harness.tools.replies``) first: another shape is a ``ToolError``.
"""

from __future__ import annotations

from mara_bench.core.episodes import ToolError
from mara_bench.harness.toolbase.output import Hit
from mara_bench.harness.tools.replies import SerpApiReply, SerpApiResult, SerperReply, SerperResult
from mara_bench.harness.tools.web import HttpSettings, get_json

SERPAPI_NO_RESULTS = "hasn't returned any results"


async def serper_search(query: str, *, k: int, api_key: str, url: str, http: HttpSettings) -> list[Hit]:
    reply = await get_json(
        "serper search",
        url,
        http,
        SerperReply,
        method="POST",
        json={"q": query, "num": k},
        headers={"X-API-KEY": api_key},
        keyed=True,
    )
    return [_web_hit(item) for item in reply.organic[:k] if item.link]


async def serpapi_results(
    service: str, params: dict, *, api_key: str, url: str, http: HttpSettings
) -> list[SerpApiResult]:
    """SerpAPI's organic results for one query (an empty list when Google found nothing)."""
    reply = await get_json(
        service, url, http, SerpApiReply, params={**params, "api_key": api_key}, keyed=True
    )
    if reply.error and SERPAPI_NO_RESULTS not in reply.error:
        raise ToolError(f"{service}: {reply.error}")
    return reply.organic_results


async def serpapi_search(query: str, *, k: int, api_key: str, url: str, http: HttpSettings) -> list[Hit]:
    items = await serpapi_results(
        "serpapi search", {"engine": "google", "q": query, "num": k}, api_key=api_key, url=url, http=http
    )
    return [_web_hit(item) for item in items[:k] if item.link]


def _web_hit(item: SerperResult | SerpApiResult) -> Hit:
    return Hit(
        title=item.title or "", source=item.link or "", text=item.snippet or "", details=item.date or ""
    )
