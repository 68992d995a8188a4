"""The ``browse`` tool: fetch a web page or PDF and return its text, for the agent to read.

Only public addresses are fetched: every hop's host is resolved and refused if it is loopback, private,
link-local, unique-local, multicast or a cloud metadata endpoint, and the connection goes to the checked address
(``mara_bench.harness.tools.addresses``; ``browse_allow_private`` lifts this for local testing).
Pages on the leak blocklist are refused (also after redirects), and so is any answer larger than
``browse_max_bytes`` (its download stops there). HTML is decoded by its HTTP or ``<meta>`` charset and reduced to
its main text (trafilatura); plain text and JSON are returned as they are. A PDF -- sent as ``application/pdf``,
or recognised by its ``%PDF-`` magic bytes whatever the content type (servers often say
``application/octet-stream``) -- is read page by page with pypdf, each page's text after a ``[page N]`` line (N is
the PDF's own page number, so pages without text leave a gap). The agent gets ``Title: ...`` (when known) and
``URL: ...`` lines, a blank line, then the text, cut at ``browse_max_chars``. The page is read in a worker
process (``mara_bench.harness.tools.page_worker``), killed after ``browse_extract_seconds``, never on the event loop. An encrypted, corrupt or image-only
PDF, and any other content type (images, archives), is a ``ToolError``.
"""

from __future__ import annotations

from mara_bench.core.episodes import ToolError
from mara_bench.harness.toolbase.blocklist import Blocklist
from mara_bench.harness.toolbase.output import ToolText
from mara_bench.harness.toolbase.settings import DEFAULT_EXTRACT_SECONDS, DEFAULT_MAX_BYTES
from mara_bench.harness.tools.addresses import AddressPolicy
from mara_bench.harness.tools.page_text import Page
from mara_bench.harness.tools.page_worker import read_in_worker
from mara_bench.harness.tools.web import HttpSettings, ResponseTooLarge, request


def _check_allowed(url: str, blocklist: Blocklist) -> None:
    if blocklist.blocks(url):
        raise ToolError(
            f"browse: {url} is on the leak blocklist (it may hold benchmark answers); try another source"
        )


async def browse(
    url: str,
    *,
    blocklist: Blocklist,
    max_chars: int,
    http: HttpSettings,
    max_bytes: int = DEFAULT_MAX_BYTES,
    extract_seconds: float = DEFAULT_EXTRACT_SECONDS,
    addresses: AddressPolicy = AddressPolicy(),
) -> ToolText:
    """The text of the page at ``url`` (``ToolError`` when refused or unreadable); ``addresses``: which hosts
    may be reached (public only by default); ``extract_seconds``: how long reading the fetched page may take."""
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        raise ToolError(f"browse: 'url' must be an http(s) URL, got {url!r}")
    url = url.strip()
    _check_allowed(url, blocklist)
    try:
        response = await request("browse", "GET", url, http, max_bytes=max_bytes, addresses=addresses)
    except ResponseTooLarge as err:
        _check_allowed(err.url, blocklist)
        size = "" if err.size is None else f" {err.size:,} bytes,"
        raise ToolError(
            f"browse: {err.url} is{size} over the limit of {max_bytes:,} bytes (browse_max_bytes)"
        ) from None
    final_url = str(response.url)
    _check_allowed(final_url, blocklist)
    content_type = response.headers.get("content-type", "text/html").split(";")[0].strip().lower()
    fetched = Page(content_type, response.content, response.charset_encoding, final_url, max_chars)
    title, text = await read_in_worker(fetched, seconds=extract_seconds)
    header = ([f"Title: {title}"] if title else []) + [f"URL: {final_url}"]
    page = "\n".join(header) + "\n\n" + text
    return ToolText(page, [page])
