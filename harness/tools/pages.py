"""Reading the pages behind search results (MARS §3.2.1: "Google Search returns up to 10 web pages per query, Google
Scholar returns up to 5 papers").

``read_pages(output, fetch)`` takes a search or scholar output (a ``ToolText`` whose ``sources`` are the results'
URLs) and returns one document per result: the text of the page at its URL when ``fetch`` could read it, else the
result's snippet/abstract as the search engine gave it. The pages are fetched concurrently, at most ``concurrency``
at a time (``fetch`` is the ``browse`` tool, with its byte limit, blocklist and PDF support); corpus passages (ids,
not URLs) are kept as they are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mara_bench.harness.toolbase.output import ToolText, tool_documents

PageFetch = Callable[[str], Awaitable[str | None]]
"""``await fetch(url)`` -> the page text, or ``None`` when it could not be read."""

WEB_SCHEMES = ("http://", "https://")
CONCURRENCY = 10
"""Pages fetched at once per tool output (one query's worth of results)."""


@dataclass(frozen=True)
class Document:
    """One result handed to System 1."""

    text: str
    source: str = ""
    page: bool = False
    """``text`` is the fetched page (``False``: the search engine's snippet, or a tool output that has no pages)."""


async def read_pages(
    output: str, fetch: PageFetch | None, *, concurrency: int = CONCURRENCY
) -> list[Document]:
    """``output``'s documents, each web result replaced by its page when ``fetch`` reads it (``None``: snippets)."""
    texts = tool_documents(output)
    sources = list(output.sources) if isinstance(output, ToolText) and output.sources else [""] * len(texts)
    readable = [i for i, source in enumerate(sources) if fetch and source.lower().startswith(WEB_SCHEMES)]
    gate = asyncio.Semaphore(concurrency)

    async def read(url: str) -> str | None:
        async with gate:
            return await fetch(url)

    pages = await asyncio.gather(*(read(sources[i]) for i in readable)) if fetch else []
    fetched = dict(zip(readable, pages, strict=True))
    return [
        Document(fetched[i], source, page=True) if fetched.get(i) else Document(text, source)
        for i, (text, source) in enumerate(zip(texts, sources, strict=True))
    ]
