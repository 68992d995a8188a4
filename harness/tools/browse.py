"""The ``browse`` tool: fetch a web page and return its main text (trafilatura), for the agent to read.

Pages on the leak blocklist are refused (also after redirects). HTML is reduced to its main text; plain text and
JSON are returned as they are; other content types (PDF, images) are refused with a ``ToolError``.
"""

from __future__ import annotations

import trafilatura

from harness.systems.types import ToolError
from harness.tools.blocklist import Blocklist
from harness.tools.output import ToolText
from harness.tools.web import HttpSettings, request

TEXT_TYPES = ("text/plain", "application/json", "text/markdown", "text/csv")


def _check_allowed(url: str, blocklist: Blocklist) -> None:
    if blocklist.blocks(url):
        raise ToolError(
            f"browse: {url} is on the leak blocklist (it may hold benchmark answers); try another source"
        )


def main_text(html: str, url: str) -> tuple[str, str]:
    """``(title, main text)`` of an HTML page; ``ToolError`` when there is no readable text."""
    text = trafilatura.extract(html, url=url, include_tables=True, include_comments=False, favor_recall=True)
    if not text or not text.strip():
        raise ToolError(f"browse: no readable main text at {url}")
    metadata = trafilatura.extract_metadata(html, default_url=url)
    return (metadata.title if metadata and metadata.title else ""), text.strip()


async def browse(url: str, *, blocklist: Blocklist, max_chars: int, http: HttpSettings) -> ToolText:
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        raise ToolError(f"browse: 'url' must be an http(s) URL, got {url!r}")
    url = url.strip()
    _check_allowed(url, blocklist)
    response = await request("browse", "GET", url, http)
    final_url = str(response.url)
    _check_allowed(final_url, blocklist)
    content_type = response.headers.get("content-type", "text/html").split(";")[0].strip().lower()
    if content_type in ("text/html", "application/xhtml+xml"):
        title, text = main_text(response.text, final_url)
    elif content_type in TEXT_TYPES:
        title, text = "", response.text.strip()
    else:
        raise ToolError(f"browse: {final_url} is {content_type}, which cannot be read as text")
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[page cut at {max_chars} characters (browse_max_chars)]"
    header = ([f"Title: {title}"] if title else []) + [f"URL: {final_url}"]
    page = "\n".join(header) + "\n\n" + text
    return ToolText(page, [page])
