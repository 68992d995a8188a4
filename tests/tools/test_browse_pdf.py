"""browse on PDFs (built by hand at run time, served by the fake web server): page-by-page text with
``[page N]`` markers, PDF detection by content type or magic bytes, encrypted/corrupt/text-less PDFs and other
binary types as tool errors, the byte limit, and the blocklist and output cap as for HTML."""

from __future__ import annotations

import io

import pypdf
import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools import ToolConfigError, ToolSettings, build_toolbox, tool_documents

PAPER = ["Attention Is All You Need\nAshish Vaswani et al.", "Results\nEnglish-German BLEU 28.4"]
PAPER_TEXT = "[page 1]\nAttention Is All You Need\nAshish Vaswani et al.\n\n[page 2]\nResults\nEnglish-German BLEU 28.4"


def toolbox(**settings):
    defaults = {"http_backoff": 0, "http_attempts": 1, "http_timeout": 5, "browse_allow_private": True}
    return build_toolbox(["browse"], **{**defaults, **settings})


def encrypted(pdf: bytes, user_password: str, algorithm: str = "RC4-128") -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


async def test_pdf_pages_come_back_with_page_markers_and_the_title(web, make_pdf):
    web.route(
        "/paper.pdf", web.reply(body=make_pdf(PAPER, title="Transformer"), content_type="application/pdf")
    )
    output = await toolbox().call("browse", url=f"{web.url}/paper.pdf")
    assert output == f"Title: Transformer\nURL: {web.url}/paper.pdf\n\n{PAPER_TEXT}"
    assert tool_documents(output) == [str(output)]


@pytest.mark.parametrize("content_type", ["application/octet-stream", "binary/octet-stream", "text/plain"])
async def test_pdf_is_recognised_by_its_magic_bytes_whatever_the_content_type(web, make_pdf, content_type):
    web.route("/download", web.reply(body=make_pdf(PAPER), content_type=content_type))
    output = await toolbox().call("browse", url=f"{web.url}/download")
    assert output == f"URL: {web.url}/download\n\n{PAPER_TEXT}"


async def test_pages_without_text_leave_a_gap_in_the_page_numbers(web, make_pdf):
    web.route(
        "/scan.pdf", web.reply(body=make_pdf(["Abstract", "", "Conclusion"]), content_type="application/pdf")
    )
    output = await toolbox().call("browse", url=f"{web.url}/scan.pdf")
    assert output == f"URL: {web.url}/scan.pdf\n\n[page 1]\nAbstract\n\n[page 3]\nConclusion"


async def test_long_pdfs_are_cut_like_long_pages(web, make_pdf):
    web.route(
        "/long.pdf", web.reply(body=make_pdf(["a" * 30, "second page"]), content_type="application/pdf")
    )
    output = await toolbox(browse_max_chars=20).call("browse", url=f"{web.url}/long.pdf")
    # "[page 1]\n" is 9 characters, so 11 of the 30 a's fit in 20
    assert output == (
        f"URL: {web.url}/long.pdf\n\n[page 1]\n{'a' * 11}\n[page cut at 20 characters (browse_max_chars)]"
    )


async def test_blocked_pdfs_are_refused_before_and_after_redirects(web, make_pdf):
    box = toolbox(blocklist=["127.0.0.1/answers", "arxiv.org/pdf/2501.14249"])
    with pytest.raises(ToolError, match="arxiv.org/pdf/2501.14249 is on the leak blocklist"):
        await box.call("browse", url="https://arxiv.org/pdf/2501.14249")
    assert web.requests == []
    web.route("/jump", web.reply(302, "", "text/plain", headers={"Location": "/answers/key.pdf"}))
    web.route("/answers/key.pdf", web.reply(body=make_pdf(["42"]), content_type="application/pdf"))
    with pytest.raises(ToolError, match=f"{web.url}/answers/key.pdf is on the leak blocklist"):
        await box.call("browse", url=f"{web.url}/jump")


async def test_password_protected_pdf_is_a_tool_error(web, make_pdf):
    web.route(
        "/locked.pdf", web.reply(body=encrypted(make_pdf(PAPER), "s3cret"), content_type="application/pdf")
    )
    with pytest.raises(ToolError) as caught:
        await toolbox().call("browse", url=f"{web.url}/locked.pdf")
    assert str(caught.value) == (
        f"browse: {web.url}/locked.pdf is an encrypted PDF that cannot be opened (it needs a password); "
        "try another copy"
    )


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
async def test_pdf_encrypted_without_a_user_password_is_read(web, make_pdf, algorithm):
    # Permission-restricted reports are encrypted with an empty user password, often with AES (pypdf[crypto]).
    body = encrypted(make_pdf(PAPER), "", algorithm)
    web.route("/restricted.pdf", web.reply(body=body, content_type="application/pdf"))
    output = await toolbox().call("browse", url=f"{web.url}/restricted.pdf")
    assert output == f"URL: {web.url}/restricted.pdf\n\n{PAPER_TEXT}"


@pytest.mark.parametrize(
    ("damage", "content_type"),
    [
        (lambda pdf: b"%PDF-1.4\nthis is not a PDF", "application/pdf"),
        (lambda pdf: b"<html><body>Access denied</body></html>", "application/pdf"),
        (lambda pdf: pdf[: len(pdf) // 2], "application/octet-stream"),  # cut short, known by its magic bytes
    ],
    ids=["garbage", "html-sent-as-pdf", "truncated"],
)
async def test_corrupt_pdf_is_a_tool_error(web, make_pdf, damage, content_type):
    web.route("/broken.pdf", web.reply(body=damage(make_pdf(PAPER)), content_type=content_type))
    with pytest.raises(
        ToolError, match=f"^browse: {web.url}/broken.pdf is not a readable PDF \\(\\w+: .+\\)$"
    ):
        await toolbox().call("browse", url=f"{web.url}/broken.pdf")


async def test_pdf_without_any_text_is_a_tool_error(web, make_pdf):
    web.route("/images.pdf", web.reply(body=make_pdf(["", ""]), content_type="application/pdf"))
    with pytest.raises(ToolError) as caught:
        await toolbox().call("browse", url=f"{web.url}/images.pdf")
    assert str(caught.value) == (
        f"browse: {web.url}/images.pdf is a PDF with no extractable text in its 2 page(s) (scanned images?); "
        "try an HTML version of the document"
    )


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
        (b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "application/zip"),
        (b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "application/octet-stream"),
    ],
)
async def test_other_binary_types_are_refused(web, body, content_type):
    web.route("/file", web.reply(body=body, content_type=content_type))
    with pytest.raises(ToolError) as caught:
        await toolbox().call("browse", url=f"{web.url}/file")
    assert str(caught.value) == f"browse: {web.url}/file is {content_type}, which cannot be read as text"


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "streamed"])
@pytest.mark.parametrize("content_type", ["application/pdf", "text/plain"])
async def test_answers_over_the_byte_limit_are_refused(web, make_pdf, content_type, declare_length):
    body = make_pdf(PAPER) if content_type == "application/pdf" else b"x" * 1000
    web.route("/big", web.reply(body=body, content_type=content_type, declare_length=declare_length))
    # Through the toolbox, so the ``browse_max_bytes`` setting is what reaches the tool; at the limit: read.
    assert await toolbox(browse_max_bytes=len(body)).call("browse", url=f"{web.url}/big")
    with pytest.raises(ToolError) as caught:
        await toolbox(browse_max_bytes=len(body) - 1).call("browse", url=f"{web.url}/big")
    size = f" {len(body):,} bytes," if declare_length else ""
    assert str(caught.value) == (
        f"browse: {web.url}/big is{size} over the limit of {len(body) - 1:,} bytes (browse_max_bytes)"
    )


async def test_a_large_undeclared_download_stops_at_the_limit(web):
    web.route("/huge", web.reply(body=b"y" * 4_000_000, content_type="text/plain", declare_length=False))
    with pytest.raises(ToolError, match=r"is over the limit of 1,000 bytes"):
        await toolbox(browse_max_bytes=1000).call("browse", url=f"{web.url}/huge")


def test_byte_limit_setting():
    assert ToolSettings().browse_max_bytes == 20_000_000
    assert ToolSettings.from_options({"browse_max_bytes": "5000000"}).browse_max_bytes == 5_000_000
    with pytest.raises(ToolConfigError, match="tool settings: browse_max_bytes: must be >= 1, got '0'"):
        ToolSettings.from_options({"browse_max_bytes": "0"})
