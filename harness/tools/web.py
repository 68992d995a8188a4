"""HTTP for the web tools: one request with retries on transient failures, and failures as ``ToolError``.

Transient = a timeout, a connection error, or HTTP 429/500/502/503/504; those are retried with exponential
back-off (tenacity) up to ``attempts`` tries. Other HTTP errors fail at once. Error messages name the service
and the URL without its query string, so API keys never reach the agent or the logs.
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
) -> httpx.Response:
    """Send one request (retrying transient failures) and return a successful response, else ``ToolError``."""
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
                    response = await client.request(method, url, params=params, json=json, headers=headers)
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


async def get_json(service: str, url: str, settings: HttpSettings, **kwargs: Any) -> Any:
    """``request`` with GET (or ``method=``) and a JSON body expected back."""
    response = await request(service, kwargs.pop("method", "GET"), url, settings, **kwargs)
    try:
        return response.json()
    except ValueError:
        raise ToolError(f"{service}: the answer from {_public_url(url)} is not JSON") from None
