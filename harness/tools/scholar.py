"""Scholarly search backends: Google Scholar through SerpAPI (``SERPAPI_API_KEY``), and OpenAlex (keyless).

Each answers one query with up to ``k`` papers as ``Hit``s: title, URL, a details line (authors · year ·
venue · cited by) and the snippet (SerpAPI) or the abstract (OpenAlex). Answers are checked against their shape
(``mara_bench.harness.tools.replies``) first: another shape is a ``ToolError``.
"""

from __future__ import annotations

from mara_bench.harness.toolbase.output import Hit
from mara_bench.harness.toolbase.settings import OPENALEX_URL, SERPAPI_URL
from mara_bench.harness.tools.replies import OpenAlexReply, OpenAlexWork, SerpApiResult
from mara_bench.harness.tools.web import HttpSettings, get_json
from mara_bench.harness.tools.web_search import serpapi_results

MAX_AUTHORS = 5


async def serpapi_scholar(
    query: str, *, k: int, api_key: str, url: str = SERPAPI_URL, http: HttpSettings
) -> list[Hit]:
    items = await serpapi_results(
        "serpapi scholar",
        {"engine": "google_scholar", "q": query, "num": k},
        api_key=api_key,
        url=url,
        http=http,
    )
    return [_scholar_hit(item) for item in items[:k]]


def _scholar_hit(item: SerpApiResult) -> Hit:
    cited_by = item.inline_links.cited_by.total if item.inline_links and item.inline_links.cited_by else None
    details = [item.publication_info.summary if item.publication_info else None]
    details += [f"cited by {cited_by}"] if cited_by is not None else []
    return Hit(
        title=item.title or "",
        source=item.link or item.result_id or "",
        text=item.snippet or "",
        details=" · ".join(part for part in details if part),
    )


def abstract_from_inverted_index(inverted: dict[str, list[int]] | None) -> str:
    """OpenAlex stores abstracts as ``{word: [positions]}``; put the words back in order."""
    if not inverted:
        return ""
    positions = {position: word for word, places in inverted.items() for position in places}
    return " ".join(positions[index] for index in sorted(positions))


async def openalex_scholar(query: str, *, k: int, url: str = OPENALEX_URL, http: HttpSettings) -> list[Hit]:
    reply = await get_json(
        "openalex scholar", url, http, OpenAlexReply, params={"search": query, "per-page": k}
    )
    return [_openalex_hit(work) for work in reply.results[:k]]


def _openalex_hit(work: OpenAlexWork) -> Hit:
    authors = [a.author.display_name or "" for a in work.authorships if a.author]
    location = work.primary_location
    venue = location.source.display_name if location and location.source else None
    details = [
        ", ".join(authors[:MAX_AUTHORS]) + (" et al." if len(authors) > MAX_AUTHORS else ""),
        str(work.publication_year or ""),
        venue or "",
        f"cited by {work.cited_by_count}" if work.cited_by_count is not None else "",
    ]
    landing = location.landing_page_url if location else None
    return Hit(
        title=work.display_name or work.title or "",
        source=work.doi or landing or work.id or "",
        text=abstract_from_inverted_index(work.abstract_inverted_index),
        details=" · ".join(part for part in details if part),
    )
