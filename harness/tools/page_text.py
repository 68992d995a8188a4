"""A fetched page read as text, the work ``browse`` hands to its page workers (``mara_bench.harness.tools.page_worker``):
HTML decoded by its HTTP or ``<meta>`` charset and reduced to its main text (trafilatura), plain text and JSON as
they are, a PDF page by page (pypdf); anything else is a ``ToolError``.
"""

from __future__ import annotations

import codecs
import io
import re
from dataclasses import dataclass

import pypdf
import trafilatura

from mara_bench.core.episodes import ToolError

TEXT_TYPES = ("text/plain", "application/json", "text/markdown", "text/csv")
PDF_TYPE = "application/pdf"
PDF_MAGIC = b"%PDF-"


@dataclass(frozen=True)
class Page:
    """A fetched page, as ``read_page`` takes it."""

    content_type: str
    body: bytes
    charset: str | None
    url: str
    max_chars: int


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def html_source(body: bytes, charset: str | None) -> str:
    """An HTML page's text, decoded by the HTTP ``charset``, else by the page's own ``<meta charset>`` (or
    ``http-equiv`` Content-Type) in its first 4 KB -- many non-English sites declare GBK, Shift_JIS or
    windows-1251 only there -- else as UTF-8; undecodable bytes become U+FFFD."""
    declared = _META_CHARSET.search(body[:4096])
    for name in (charset, declared.group(1).decode("ascii") if declared else None):
        try:
            if name:
                return body.decode(codecs.lookup(name).name, "replace")
        except LookupError:
            continue  # an unknown charset name: try the next, then UTF-8 like a browser would
    return body.decode("utf-8", "replace")


def main_text(html: str, url: str) -> tuple[str, str]:
    """``(title, main text)`` of an HTML page; ``ToolError`` when there is no readable text."""
    text = trafilatura.extract(html, url=url, include_tables=True, include_comments=False, favor_recall=True)
    if not text or not text.strip():
        raise ToolError(f"browse: no readable main text at {url}")
    metadata = trafilatura.extract_metadata(html, default_url=url)
    return (metadata.title if metadata and metadata.title else ""), text.strip()


def is_pdf(content_type: str, body: bytes) -> bool:
    """Sent as a PDF, or starting with the PDF magic bytes (after any blank space)."""
    return content_type == PDF_TYPE or body[:1024].lstrip().startswith(PDF_MAGIC)


def pdf_text(data: bytes, url: str, max_chars: int) -> tuple[str, str]:
    """``(title, text)`` of a PDF, each page's text after a ``[page N]`` line; ``ToolError`` when unreadable.

    Pages are read only until the text passes ``max_chars`` (the rest would be cut anyway).
    """
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        _decrypt(reader, url)
        pages: list[str] = []
        length = 0
        for number, page in enumerate(reader.pages, 1):
            text = page.extract_text().strip()
            if text:
                pages.append(f"[page {number}]\n{text}")
                length += len(pages[-1]) + 2
            if length > max_chars:
                break
        title = (reader.metadata.title if reader.metadata else None) or ""
        page_count = len(reader.pages)
    except ToolError:
        raise
    except Exception as err:  # pypdf meets broken files with many error types; any of them means unreadable
        raise ToolError(f"browse: {url} is not a readable PDF ({type(err).__name__}: {err})") from None
    if not pages:
        raise ToolError(
            f"browse: {url} is a PDF with no extractable text in its {page_count} page(s) (scanned images?); "
            "try an HTML version of the document"
        )
    return str(title).strip(), "\n\n".join(pages)


def _decrypt(reader: pypdf.PdfReader, url: str) -> None:
    """Open an encrypted PDF that has no user password (only owner restrictions), else ``ToolError``."""
    if not reader.is_encrypted:
        return
    try:
        opened = reader.decrypt("") != pypdf.PasswordType.NOT_DECRYPTED
        reason = "it needs a password"
    except Exception as err:  # e.g. pypdf's DependencyError for AES without the cryptography package
        opened, reason = False, f"{type(err).__name__}: {err}"
    if not opened:
        raise ToolError(
            f"browse: {url} is an encrypted PDF that cannot be opened ({reason}); try another copy"
        )


def read_page(page: Page) -> tuple[str, str]:
    """``(title, text)`` of a fetched page (PDF, HTML or plain text), the text cut at ``page.max_chars`` with a
    note; ``ToolError`` when it cannot be read as text. Runs in a worker process (``mara_bench.harness.tools.page_worker``)."""
    if is_pdf(page.content_type, page.body):
        title, text = pdf_text(page.body, page.url, page.max_chars)
    elif page.content_type in ("text/html", "application/xhtml+xml"):
        title, text = main_text(html_source(page.body, page.charset), page.url)
    elif page.content_type in TEXT_TYPES:
        title, text = "", html_source(page.body, page.charset).strip()
    else:
        raise ToolError(f"browse: {page.url} is {page.content_type}, which cannot be read as text")
    if len(text) > page.max_chars:
        text = text[: page.max_chars] + f"\n[page cut at {page.max_chars} characters (browse_max_chars)]"
    return title, text
