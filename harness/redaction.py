"""Credentials in URLs, found and hidden in one place, so none is logged, printed, stored or handed to Inspect.

Two forms ride in a URL: ``user:password@`` (any userinfo: a lone token before ``@`` is a credential too) and query
parameters that name a secret (``?key=``, ``api_key``, ``token``, ``sig``, ...; ``CREDENTIAL_PARAMETERS``). The
third form, a header key (``X-API-KEY``), only ever comes from the environment and goes to its endpoint alone
(``mara_bench.harness.tools.web``).

- ``credential_forms(url)`` says which forms a URL carries. A setting that Inspect records as given (``-T`` task
  arguments, ``-M`` model arguments, model roles) is refused when it carries any (``credential_problem``): Inspect
  writes those into the eval log verbatim, so the credential must come from the environment instead.
- ``redact_url(url)``, ``redact_text(text)`` and ``redact_record(data)`` hide them (``***``) wherever the harness
  shows or stores what it holds: an eval log's tool-cache metadata, ``mara tools`` output, every error line naming a
  store or an endpoint, and a training run's ``config.json`` (whose grader ``api_key`` is hidden too).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

HIDDEN = "***"
CREDENTIAL_PARAMETERS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "access_key",
        "access_token",
        "token",
        "auth",
        "authorization",
        "password",
        "passwd",
        "secret",
        "client_secret",
        "sig",
        "signature",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
    }
)
"""Query parameters (compared case-blind) whose value is a secret."""
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _secret_parameter(name: str) -> bool:
    return name.lower() in CREDENTIAL_PARAMETERS


def credential_forms(url: str) -> list[str]:
    """The credential forms ``url`` carries: ``user:password`` (any userinfo) and ``?NAME=`` per secret parameter."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    forms = ["user:password"] if "@" in parts.netloc else []
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    return forms + [f"?{name}=" for name, _ in query if _secret_parameter(name)]


def credential_problem(url: str) -> str | None:
    """Why ``url`` may not be given where Inspect records it verbatim, or ``None`` when it carries no credential."""
    forms = credential_forms(url)
    if not forms:
        return None
    return (
        f"{redact_url(url)} carries a credential ({', '.join(forms)}), which the eval log would record; give the "
        "URL without it and the credential through the environment (an API-key variable, or the storage's own "
        "credential settings)"
    )


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret query values replaced by ``***`` (anything else unchanged)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return URL_IN_TEXT.sub(HIDDEN, url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = HIDDEN + "@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        if any(_secret_parameter(name) for name, _ in pairs):
            hidden = [(name, HIDDEN if _secret_parameter(name) else value) for name, value in pairs]
            query = urllib.parse.urlencode(hidden, safe="*")
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (``redact_url``)."""
    return URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)


def redact_record(value: Any) -> Any:
    """``value`` (JSON-like data: a run's configuration, a log's metadata) with every string's URLs redacted and
    the value of every key that names a secret (``api_key``, ``token``, ...) replaced by ``***``."""
    if isinstance(value, dict):
        return {
            key: HIDDEN if _secret_parameter(str(key)) and item is not None else redact_record(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_record(item) for item in value]
    return redact_text(value) if isinstance(value, str) else value
