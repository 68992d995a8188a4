"""HTTP for the web tools: one request with retries on transient failures, and failures as ``ToolError``.

Transient = a timeout, a connection error, or HTTP 429/500/502/503/504; those are retried with exponential
back-off (tenacity) up to ``attempts`` tries. Other HTTP errors fail at once. Error messages name the service
and the URL without its query string, so API keys never reach the agent or the logs. With ``max_bytes`` the body
is streamed and the download stops as soon as it (or its declared ``Content-Length``) passes the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from harness.systems.types import ToolError

TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "mara-bench/0.1 (research evaluation harness)"


@dataclass(frozen=True)
class HttpSettings:
    timeout: float = 30.0
    """Seconds per attempt."""
    attempts: int = 4
    """Tries in all, for transient failures."""
    backoff: float = 1.0
    """First wait between tries in seconds; doubles each retry (capped at 30 s)."""


class ResponseTooLarge(Exception):
    """The answer's body passed ``max_bytes``; ``size`` is its declared length when the server sent one."""

    def __init__(self, url: str, size: int | None):
        super().__init__(f"{url}: over the byte limit")
        self.url, self.size = url, size


class _TransientStatus(Exception):
    def __init__(self, response: httpx.Response):
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def _public_url(url: str) -> str:
    return url.split("#", 1)[0].split("?", 1)[0]


async def request(
    service: str,
    method: str,
    url: str,
    settings: HttpSettings,
    *,
    params: dict[str, Any] | None = None,
    json: Any = None,
    headers: dict[str, str] | None = None,
    max_bytes: int | None = None,
) -> httpx.Response:
    """Send one request (retrying transient failures) and return a successful response, else ``ToolError``;
    ``ResponseTooLarge`` when a body passes ``max_bytes``."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(settings.attempts),
        wait=wait_exponential(multiplier=settings.backoff, max=30),
        retry=retry_if_exception_type((_TransientStatus, httpx.TimeoutException, httpx.TransportError)),
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                async with httpx.AsyncClient(
                    timeout=settings.timeout, follow_redirects=True, headers={"User-Agent": USER_AGENT}
                ) as client:
                    outgoing = client.build_request(method, url, params=params, json=json, headers=headers)
                    response = await _read_bounded(client, outgoing, max_bytes)
                if response.status_code in TRANSIENT_STATUS:
                    raise _TransientStatus(response)
    except _TransientStatus as err:
        raise ToolError(
            f"{service}: HTTP {err.response.status_code} from {_public_url(url)} after {settings.attempts} attempts"
        ) from None
    except httpx.TimeoutException:
        raise ToolError(
            f"{service}: no answer from {_public_url(url)} within {settings.timeout:g} s ({settings.attempts} attempts)"
        ) from None
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        raise ToolError(f"{service}: cannot reach {_public_url(url)} ({type(err).__name__}: {err})") from None
    if response.status_code >= 400:
        hint = " (check the API key)" if response.status_code in (401, 403) else ""
        raise ToolError(
            f"{service}: HTTP {response.status_code} {response.reason_phrase} from {_public_url(url)}{hint}"
        )
    return response


async def _read_bounded(
    client: httpx.AsyncClient, outgoing: httpx.Request, max_bytes: int | None
) -> httpx.Response:
    """Send ``outgoing`` and read its (decoded) body, stopping once it passes ``max_bytes``."""
    response = await client.send(outgoing, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if max_bytes is not None and declared.isdigit() and int(declared) > max_bytes:
            raise ResponseTooLarge(str(response.url), int(declared))
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if max_bytes is not None and len(body) > max_bytes:
                raise ResponseTooLarge(str(response.url), None)
    finally:
        await response.aclose()
    # The body is already decoded, so the rebuilt response must not claim an encoding or the wire length.
    kept = [
        (k, v) for k, v in response.headers.multi_items() if k not in ("content-encoding", "content-length")
    ]
    return httpx.Response(response.status_code, headers=kept, content=bytes(body), request=response.request)


async def get_json(service: str, url: str, settings: HttpSettings, **kwargs: Any) -> Any:
    """``request`` with GET (or ``method=``) and a JSON body expected back."""
    response = await request(service, kwargs.pop("method", "GET"), url, settings, **kwargs)
    try:
        return response.json()
    except ValueError:
        raise ToolError(f"{service}: the answer from {_public_url(url)} is not JSON") from None
