"""HTTP for the web tools: one request with retries on transient failures, hard bounds on bytes and time, and
failures as ``ToolError``.

Transient = a timeout, a connection error, or HTTP 429/500/502/503/504; those are retried with exponential
back-off (tenacity) up to ``attempts`` tries, and when every try fails (or a backend's answer is not JSON) the error
is a ``TransientToolError``, which the tool cache never records. Other HTTP errors fail at once; a 401/403 hints at the API key
only for requests that carry one (``keyed``). Error messages name the service and the URL without its query
string, so API keys never reach the agent or the logs.

Bounds: the body is streamed and decoded here (``mara_bench.harness.tools.decoding``), so the download stops as soon as the
*decoded* body (or its declared ``Content-Length``) passes ``max_bytes`` -- a compressed bomb never inflates past
the limit. ``timeout`` bounds each read; ``deadline`` bounds the whole request (every attempt, back-off wait,
redirect and byte of the body), so a server that drips one byte at a time cannot hold a call.

Redirects are followed here, not by httpx. Headers the caller set (API keys such as Serper's ``X-API-KEY``) go
only to the origin (scheme, host, port) they were meant for, never to another one a redirect points at. With an
``AddressPolicy`` (browse, whose URLs the model chooses) each hop's host is also resolved and checked by the
policy, and the request goes to the checked IP address (``Host`` header and TLS server name kept), so the name
cannot resolve elsewhere at connect time. Search and scholar endpoints (``HttpSettings.redirects``) get the same
check on every redirect to another origin: a refused one is named in the error.
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from mara_bench.core.episodes import ToolError, TransientToolError
from mara_bench.harness.redaction import redact_url
from mara_bench.harness.tools.addresses import AddressPolicy, AddressRefused, UnresolvableHost
from mara_bench.harness.tools.decoding import (
    ACCEPT_ENCODING,
    BoundedDecoder,
    DecodedTooLarge,
    UnsupportedEncoding,
)

ReplyT = TypeVar("ReplyT", bound=BaseModel)
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 10
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = "mara-bench/0.1 (research evaluation harness)"
REPLY_MAX_BYTES = 10_000_000
"""Largest decoded answer a search or scholar backend may send, in bytes."""


@dataclass(frozen=True)
class HttpSettings:
    timeout: float = 30.0
    """Seconds per attempt."""
    attempts: int = 4
    """Tries in all, for transient failures."""
    backoff: float = 1.0
    """First wait between tries in seconds; doubles each retry (capped at 30 s)."""
    deadline: float = 120.0
    """Seconds the whole request may take: every attempt, wait, redirect and byte of the body."""
    redirects: AddressPolicy | None = None
    """Checks every redirect to another origin than the request's own (search and scholar endpoints: the operator
    chose the endpoint, not where it sends us), as browse checks every hop."""


class ResponseTooLarge(Exception):
    """The answer's body passed ``max_bytes``; ``size`` is its declared length when the server sent one."""

    def __init__(self, url: str, size: int | None):
        super().__init__(f"{url}: over the byte limit")
        self.url, self.size = url, size


class _Refused(Exception):
    """A hop the address policy (or the scheme) does not allow."""

    def __init__(self, url: httpx.URL, reason: str):
        super().__init__(reason)
        self.url = str(url)


class _Unreadable(Exception):
    """An answer whose body cannot be decoded."""

    def __init__(self, url: httpx.URL, reason: str):
        super().__init__(reason)
        self.url = str(url)


class _TransientStatus(Exception):
    def __init__(self, response: httpx.Response):
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def _public_url(url: str) -> str:
    """``url`` as error messages show it: no query, no fragment, no credentials."""
    return redact_url(url.split("#", 1)[0].split("?", 1)[0])


async def request(
    service: str,
    method: str,
    url: str,
    settings: HttpSettings,
    *,
    params: dict[str, Any] | None = None,
    json: Any = None,
    headers: dict[str, str] | None = None,
    max_bytes: int = REPLY_MAX_BYTES,
    addresses: AddressPolicy | None = None,
    keyed: bool = False,
) -> httpx.Response:
    """Send one request (retrying transient failures) and return a successful response, else ``ToolError``;
    ``ResponseTooLarge`` when a decoded body passes ``max_bytes``. ``headers`` go to ``url``'s origin only;
    ``addresses``: check and pin every hop; ``keyed``: the request carries an API key."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(settings.attempts),
        wait=wait_exponential(multiplier=settings.backoff, max=30),
        retry=retry_if_exception_type((_TransientStatus, httpx.TimeoutException, httpx.TransportError)),
        reraise=True,
    )
    try:
        async with asyncio.timeout(settings.deadline):
            async for attempt in retrying:
                with attempt:
                    async with httpx.AsyncClient(
                        timeout=settings.timeout,
                        follow_redirects=False,
                        headers={"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING},
                    ) as client:
                        outgoing = client.build_request(
                            method, url, params=params, json=json, headers=headers
                        )
                        response = await _follow(
                            client, outgoing, dict(headers or {}), max_bytes, addresses, settings.redirects
                        )
                    if response.status_code in TRANSIENT_STATUS:
                        raise _TransientStatus(response)
    except TimeoutError:
        raise TransientToolError(
            f"{service}: no complete answer from {_public_url(url)} within the deadline of "
            f"{settings.deadline:g} s (web_deadline)"
        ) from None
    except _Refused as err:
        raise ToolError(f"{service}: will not fetch {_public_url(err.url)}: {err}") from None
    except _Unreadable as err:
        raise ToolError(f"{service}: cannot read the answer from {_public_url(err.url)}: {err}") from None
    except _TransientStatus as err:
        raise TransientToolError(
            f"{service}: HTTP {err.response.status_code} from {_public_url(url)} after {settings.attempts} attempts"
        ) from None
    except httpx.TimeoutException:
        raise TransientToolError(
            f"{service}: no answer from {_public_url(url)} within {settings.timeout:g} s ({settings.attempts} attempts)"
        ) from None
    except httpx.TransportError as err:
        raise TransientToolError(
            f"{service}: cannot reach {_public_url(url)} ({type(err).__name__}: {err})"
        ) from None
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        raise ToolError(f"{service}: cannot reach {_public_url(url)} ({type(err).__name__}: {err})") from None
    if response.status_code >= 400:
        hint = " (check the API key)" if keyed and response.status_code in (401, 403) else ""
        raise ToolError(
            f"{service}: HTTP {response.status_code} {response.reason_phrase} from {_public_url(url)}{hint}"
        )
    return response


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or DEFAULT_PORTS.get(url.scheme)


async def _follow(
    client: httpx.AsyncClient,
    outgoing: httpx.Request,
    caller_headers: dict[str, str],
    max_bytes: int,
    addresses: AddressPolicy | None,
    redirects: AddressPolicy | None = None,
) -> httpx.Response:
    """Send ``outgoing`` and follow its redirects; ``caller_headers`` are sent again only to ``outgoing``'s
    origin, and with ``addresses`` every hop is checked and sent to the checked IP address (with ``redirects``,
    every hop to another origin). The response carries the last hop's real URL."""
    origin = _origin(outgoing.url)
    hop, url = outgoing, outgoing.url
    for _ in range(MAX_REDIRECTS + 1):
        if url.scheme not in DEFAULT_PORTS:
            raise _Refused(url, "only http(s) URLs can be fetched")
        policy = addresses or (redirects if _origin(url) != origin else None)
        sent = hop if policy is None else await _pinned(client, hop, policy)
        response = await _read_bounded(client, sent, max_bytes, hop.url)
        location = response.headers.get("location")
        if response.status_code not in REDIRECT_STATUS or not location:
            return response
        url = hop.url.join(location)
        if url.scheme not in DEFAULT_PORTS:
            continue  # refused at the top of the loop, named as the server wrote it
        keep_body = response.status_code in (307, 308)
        headers = dict(caller_headers) if _origin(url) == origin else {}
        if keep_body and "content-type" in hop.headers:
            headers["Content-Type"] = hop.headers["content-type"]
        hop = client.build_request(
            hop.method if keep_body else "GET",
            url,
            headers=headers,
            content=hop.content if keep_body else None,
        )
    raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects", request=outgoing)


async def _pinned(client: httpx.AsyncClient, hop: httpx.Request, addresses: AddressPolicy) -> httpx.Request:
    """``hop`` sent to its host's address once ``addresses`` allows it (``Host`` and TLS server name kept)."""
    url = hop.url
    try:
        address = await addresses.resolve(url.host, url.port or DEFAULT_PORTS[url.scheme])
    except AddressRefused as err:
        raise _Refused(url, f"{err}; only public addresses can be fetched") from None
    except UnresolvableHost as err:
        raise httpx.ConnectError(str(err), request=hop) from None
    headers = hop.headers.copy()
    headers["Host"] = url.netloc.decode("ascii")
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    return client.build_request(
        hop.method, url.copy_with(host=address), headers=headers, content=hop.content, extensions=extensions
    )


async def _read_bounded(
    client: httpx.AsyncClient, outgoing: httpx.Request, max_bytes: int, url: httpx.URL
) -> httpx.Response:
    """Send ``outgoing`` and read its body, decoded here and stopped once it passes ``max_bytes``; ``url`` is
    the address to report (``outgoing`` may have gone to a pinned IP address)."""
    response = await client.send(outgoing, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLarge(str(url), int(declared))
        try:
            decoder = BoundedDecoder(response.headers.get("content-encoding", ""), max_bytes)
            body = bytearray()
            async for chunk in response.aiter_raw():
                body += decoder.feed(chunk)
            body += decoder.flush()
        except DecodedTooLarge:
            raise ResponseTooLarge(str(url), None) from None
        except UnsupportedEncoding as err:
            raise _Unreadable(url, f"it is sent with Content-Encoding {err}, which is not read") from None
        except zlib.error as err:
            raise _Unreadable(url, f"its compressed body is corrupt ({err})") from None
    finally:
        await response.aclose()
    # The body is already decoded, so the rebuilt response must not claim an encoding or the wire length.
    kept = [
        (k, v) for k, v in response.headers.multi_items() if k not in ("content-encoding", "content-length")
    ]
    request = httpx.Request(outgoing.method, url)
    return httpx.Response(response.status_code, headers=kept, content=bytes(body), request=request)


async def get_json(
    service: str, url: str, settings: HttpSettings, shape: type[ReplyT], **kwargs: Any
) -> ReplyT:
    """``request`` with GET (or ``method=``) and a JSON body of ``shape`` expected back; ``ToolError`` when the
    body is not JSON, not of that shape (the first problems named, never the values) or over
    ``REPLY_MAX_BYTES``."""
    try:
        response = await request(service, kwargs.pop("method", "GET"), url, settings, **kwargs)
    except ResponseTooLarge as err:
        raise ToolError(
            f"{service}: the answer from {_public_url(err.url)} is over {REPLY_MAX_BYTES:,} bytes"
        ) from None
    try:
        data = response.json()
    except ValueError:
        raise TransientToolError(f"{service}: the answer from {_public_url(url)} is not JSON") from None
    try:
        return shape.model_validate(data)
    except ValidationError as err:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'the answer'}: {e['msg']}" for e in err.errors()]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ToolError(
            f"{service}: the answer from {_public_url(url)} has an unexpected shape: {'; '.join(problems[:3])}{more}"
        ) from None
