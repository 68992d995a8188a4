"""Which tool settings shape a tool's answer, and so belong in the key of its recorded responses; and how large a
recorded response to a request may be.

A response recorded with ``k=10`` must not answer a run with ``k=5``, one recorded with the python tool unisolated
(which can read host files) must not answer a bubblewrap run, and one recorded with private addresses allowed must
not answer a run that refuses them. A corpus tool's responses are keyed by its index's content (the hash of the
index's manifest: corpus hash, model, kind), not by its folder's name. Endpoint URLs, API keys, timeouts and
retries do not change what a successful call returns, so they stay out and a snapshot replays against any endpoint.
docs/tool-cache.md has the table.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from mara_bench.harness.toolbase.settings import ToolConfigError, ToolSettings
from mara_bench.harness.toolcache.store import MAX_RESPONSE_BYTES

SHAPING_SETTINGS: dict[str, tuple[str, ...]] = {
    "search": ("search_backend", "k", "blocklist"),
    "retrieve": ("k", "index_model"),
    "scholar": ("scholar_backend", "scholar_k", "blocklist"),
    "browse": ("browse_max_chars", "browse_max_bytes", "blocklist", "browse_allow_private"),
    "python": ("python_timeout", "python_memory_mb", "python_max_output", "python_sandbox"),
}
OUTPUT_LIMITS = {"browse": "browse_max_chars", "python": "python_max_output"}
"""The setting bounding a tool's answer in characters (browse: the page text; python: each output stream)."""
BYTES_PER_CHARACTER = 12
"""Stored bytes one character of such an answer may take: JSON-escaped (up to 6 bytes), and held twice (the text
and its document, or stdout and stderr)."""
SLACK_CHARACTERS = 16_384
"""Characters an answer may hold beyond its limit: a page's title and URL lines, cut notes, a python error."""


def tool_variant(name: str, settings: ToolSettings) -> dict[str, Any]:
    """The settings of tool ``name`` that shape its answers (a corpus tool adds its index's content identity)."""
    variant = {key: getattr(settings, key) for key in SHAPING_SETTINGS.get(name, ())}
    variant = {key: list(value) if isinstance(value, tuple) else value for key, value in variant.items()}
    local = name == "retrieve" or (name == "search" and settings.search_backend == "local")
    if local:
        variant.pop("blocklist", None)
        variant["index"] = index_identity(settings.index_path(), name)
    return variant


def index_identity(path: str | None, tool: str) -> str | None:
    """``sha256:<hash of the index's manifest>``: what the index holds, wherever its folder is and whatever its
    name; ``None`` without an index (the live tool refuses to build then)."""
    if not path:
        return None
    from mara_bench.harness.retrieval.store import (
        MANIFEST as INDEX_MANIFEST,
    )  # only corpus tools load the retrieval code

    try:
        manifest = (Path(path) / INDEX_MANIFEST).read_bytes()
    except OSError as err:
        raise ToolConfigError(
            f"tool {tool!r}: cannot read {Path(path) / INDEX_MANIFEST} ({err.strerror}), which identifies the index "
            "its recorded responses are keyed by; pass -T index=DIR of the index they were recorded with"
        ) from None
    return "sha256:" + hashlib.sha256(manifest).hexdigest()


def response_limit(request: dict[str, Any]) -> int:
    """The most bytes a stored response to ``request`` may take: what its recording settings let the tool return
    (``OUTPUT_LIMITS``), else the store-wide ``MAX_RESPONSE_BYTES``."""
    setting = OUTPUT_LIMITS.get(request.get("tool", ""))
    characters = request.get("variant", {}).get(setting) if setting else None
    if isinstance(characters, int) and not isinstance(characters, bool) and characters > 0:
        return min(MAX_RESPONSE_BYTES, BYTES_PER_CHARACTER * (characters + SLACK_CHARACTERS))
    return MAX_RESPONSE_BYTES
