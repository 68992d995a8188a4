"""Which tool settings shape a tool's answer, and so belong in the key of its recorded responses.

A response recorded with ``k=10`` must not answer a run with ``k=5``; the endpoint URLs, API keys, timeouts and
retries do not change what a successful call returns, so they stay out and a snapshot replays against any endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.tools.settings import ToolSettings

SHAPING_SETTINGS: dict[str, tuple[str, ...]] = {
    "search": ("search_backend", "k", "blocklist"),
    "retrieve": ("k", "index_model"),
    "scholar": ("scholar_backend", "scholar_k", "blocklist"),
    "browse": ("browse_max_chars", "browse_max_bytes", "blocklist"),
    "python": ("python_timeout", "python_memory_mb", "python_max_output"),
}


def tool_variant(name: str, settings: ToolSettings) -> dict[str, Any]:
    """The settings of tool ``name`` that shape its answers (a corpus tool adds its index folder's name)."""
    variant = {key: getattr(settings, key) for key in SHAPING_SETTINGS.get(name, ())}
    variant = {key: list(value) if isinstance(value, tuple) else value for key, value in variant.items()}
    local = name == "retrieve" or (name == "search" and settings.search_backend == "local")
    if local:
        variant.pop("blocklist", None)
        index = settings.index_path()
        variant["index"] = Path(index).name if index else None
    return variant
