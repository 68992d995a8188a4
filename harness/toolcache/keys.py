"""What keys a recorded response: a tool call's request (tool, normalised arguments, shaping settings) and its hash.

Arguments are normalised only where the live tool would do the same thing with either form, so two requests share a
key only when they get the same answer:

- a ``url`` is put in one form by the standard library: stripped as ``browse`` strips it, every character outside
  printable ASCII percent-encoded (a tab, ``\\x1f``, ``\\u2028``, ``\\xa0`` and ``\\u3000`` stay distinct), scheme and
  host lower-cased, the ``#fragment`` dropped (it is never sent);
- other strings are stripped and their runs of ASCII blank space (space, tab, newline) collapsed to one space;
- ``code`` (python source) is kept byte for byte.

Names (snapshots, tools) and hashes that become paths in a store pass ``check_name``/``check_hash`` first.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from typing import Any

VERBATIM_ARGUMENTS = frozenset({"code"})
"""Arguments whose every character matters (python source), kept exactly."""
URL_ARGUMENTS = frozenset({"url"})
URL_SAFE = "!#$%&'()*+,/:;=?@[]~"
"""Characters a URL keeps as they are; any other outside ASCII letters and digits is percent-encoded."""
ASCII_BLANKS = re.compile(r"[ \t\n\r\f\v]+")
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SAFE_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 128 characters"
HASH = re.compile(r"[0-9a-f]{64}")


class UnsafeName(ValueError):
    """A name or hash outside its alphabet; the message says which rule it breaks (the caller names the source)."""


def check_name(name: Any, what: str = "snapshot name") -> str:
    """``name`` when it is a safe store name (one path component, printable), else ``UnsafeName``."""
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name):
        raise UnsafeName(f"{what} {ascii(name)[:80]} is not allowed: use {SAFE_NAME_RULE}")
    return name


def check_hash(value: Any, what: str = "content hash") -> str:
    """``value`` when it is a lower-case hex sha256 digest, else ``UnsafeName``."""
    if not isinstance(value, str) or not HASH.fullmatch(value):
        raise UnsafeName(f"{what} {ascii(value)[:80]} is not a sha256 hex digest")
    return value


def canonical_url(url: str) -> str:
    """``url`` in the one form that keys it (see the module docstring)."""
    quoted = urllib.parse.quote(url.strip(), safe=URL_SAFE)
    parts = urllib.parse.urlsplit(quoted)
    host = parts.netloc.rpartition("@")
    netloc = host[0] + host[1] + host[2].lower()
    return urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))


def normalised(name: str, value: Any) -> Any:
    """An argument as it keys the store (lists item by item)."""
    if isinstance(value, list | tuple):
        return [normalised(name, item) for item in value]
    if not isinstance(value, str) or name in VERBATIM_ARGUMENTS:
        return value
    if name in URL_ARGUMENTS:
        return canonical_url(value)
    return ASCII_BLANKS.sub(" ", value.strip())


def request_of(tool: str, arguments: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """The request that keys a call of ``tool``: its normalised arguments and ``variant`` (the shaping settings)."""
    return {
        "tool": tool,
        "arguments": {key: normalised(key, value) for key, value in sorted(arguments.items())},
        "variant": variant,
    }


def canonical_json(value: Any) -> str:
    """``value`` as JSON with sorted keys and no spaces: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: dict[str, Any]) -> str:
    """The entry key of ``request``: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical_json(request).encode()).hexdigest()


def recorded_request_problem(key: str, tool: str, request: Any) -> str | None:
    """Why a recorded ``(key, tool, request)`` cannot be trusted, or ``None``: the request must be one
    ``request_of`` builds (already normalised), of ``tool``, and hash to ``key``."""
    if not isinstance(request, dict) or set(request) != {"tool", "arguments", "variant"}:
        return "its request is not {tool, arguments, variant}"
    arguments, variant = request["arguments"], request["variant"]
    if not isinstance(arguments, dict) or not isinstance(variant, dict):
        return "its request's arguments and variant are not objects"
    if request["tool"] != tool:
        return f"its request is for tool {ascii(request['tool'])[:40]}, not {tool}"
    recorded = canonical_json(request)
    if canonical_json(request_of(tool, arguments, variant)) != recorded:
        return "its request is not normalised as a recorded request is"
    if hashlib.sha256(recorded.encode()).hexdigest() != key:
        return "its key is not the hash of its request"
    return None
