"""Tool settings: every option ``build_toolbox(names, **settings)`` accepts, typed, with defaults and ranges.

Values may arrive as strings (Inspect ``-T`` options, Python callers): numbers and booleans (``true``/``false``)
are converted and a ``blocklist`` string is split on commas. An unknown setting (the closest valid name is suggested) or a bad value raises
``ToolConfigError`` as one line ``tool settings: <name>: <problem>; <fix>``, before any sample runs.
The defaults (service URLs, size limits) live here too, so reading the settings imports no tool.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from mara_bench.core.typed_config import ConfigError, config_dataclass, validate
from mara_bench.harness.invocation import user_path
from mara_bench.harness.redaction import credential_problem
from mara_bench.harness.toolbase.blocklist import DEFAULT_BLOCKLIST

INDEX_ENV = "MARA_INDEX"
TOOL_STORE_ENV = "MARA_TOOL_STORE"
DEFAULT_TOOL_STORE = "~/.cache/mara-bench/tool-store"
SERPER_URL = "https://google.serper.dev/search"
SERPAPI_URL = "https://serpapi.com/search.json"
OPENALEX_URL = "https://api.openalex.org/works"
DEFAULT_MAX_BYTES = 20_000_000
"""Largest answer ``browse`` reads by default, in bytes."""
DEFAULT_EXTRACT_SECONDS = 30.0
"""Seconds ``browse`` may spend reading one fetched page by default."""
Count = Annotated[int, Field(ge=1)]
"""A number of things, at least one."""
Seconds = Annotated[float, Field(gt=0)]
"""A positive duration in seconds."""


class ToolConfigError(ConfigError):
    """A toolbox cannot be built as configured (unknown tool or setting, missing API key or index)."""


@config_dataclass(frozen=True, error=ToolConfigError)
class ToolSettings:
    search_backend: Literal["local", "serper", "serpapi"] = "local"
    """Backend of ``search``: ``local`` (corpus index), ``serper`` or ``serpapi``."""
    index: str | None = None
    """Index directory for ``search_backend=local`` and ``retrieve`` (default: the ``MARA_INDEX`` variable); a
    relative path is taken from the directory the command ran in."""
    index_model: str | None = None
    """Embedding model overriding the one recorded in the index (e.g. a local copy of E5)."""
    k: Count | None = None
    """Results per query: default 10 web pages (MARS) or 5 corpus passages (M-ASK, FlashRAG)."""
    scholar_backend: Literal["openalex", "serpapi"] = "openalex"
    """Backend of ``scholar``: ``openalex`` (keyless) or ``serpapi`` (Google Scholar)."""
    scholar_k: Count = 5
    """Results per ``scholar`` query."""
    max_queries: Count = 5
    """Queries allowed in one search/scholar call."""
    blocklist: tuple[str, ...] = DEFAULT_BLOCKLIST
    """Hosts (and paths) search results and browse never show: a list or a comma-separated string."""
    serper_url: str = SERPER_URL
    """Serper's search endpoint."""
    serpapi_url: str = SERPAPI_URL
    """SerpAPI's search endpoint."""
    openalex_url: str = OPENALEX_URL
    """OpenAlex's works endpoint."""
    http_timeout: Seconds = 30.0
    """Seconds one HTTP request may take."""
    http_attempts: Count = 4
    """Tries of one HTTP request (retried on timeouts, 429 and 5xx)."""
    http_backoff: Annotated[float, Field(ge=0)] = 1.0
    """Seconds before the first retry, doubled for each later one."""
    web_deadline: Seconds = 120.0
    """Seconds one web request (search, scholar or browse) may take in all: every attempt, retry wait, redirect
    and byte of the answer; a server that drips its answer is cut off here. A call that hits it is a tool error
    naming this setting. A search call's queries run side by side, each within it; browse then reads the page
    within ``browse_extract_seconds``."""
    browse_extract_seconds: Seconds = DEFAULT_EXTRACT_SECONDS
    """Seconds browse may spend turning one fetched page into text (in a worker process, killed after this)."""
    browse_max_chars: Count = 20000
    """Characters of page text browse returns; longer pages are cut with a note."""
    browse_max_bytes: Count = DEFAULT_MAX_BYTES
    """Largest answer (HTML, text or PDF) browse reads, in bytes; a larger one is a tool error."""
    browse_allow_private: bool = False
    """Let browse fetch loopback, private, link-local, unique-local, multicast and cloud-metadata addresses
    (refused by default, after DNS resolution and on every redirect); for local testing only."""
    python_timeout: Seconds = 30.0
    """Seconds one python call may run."""
    python_memory_mb: Count = 1024
    """Memory one python call may use, in MiB."""
    python_max_output: Count = 10000
    """Characters of a python call's output returned."""
    python_executable: str | None = None
    """Interpreter for the python tool (default: the one running the harness; ``python3`` in an Inspect
    sandbox)."""
    python_sandbox: Literal["bwrap", "unisolated", "inspect"] = "bwrap"
    """How the python tool is isolated: ``bwrap`` (bubblewrap namespaces, the default), ``unisolated`` (an
    in-process guard only, for machines without bwrap; logs a warning) or ``inspect`` (the sample's Inspect
    sandbox, e.g. ``--sandbox docker``)."""
    tool_cache: Literal["off", "record", "replay", "replay-or-record"] = "off"
    """Record and replay tool responses (``mara_bench.harness.toolcache``): ``record`` stores every response, ``replay``
    answers from the snapshot only (never the network; a missing response is a tool error), ``replay-or-record``
    replays what is recorded and records the rest."""
    tool_snapshot: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")] = "default"
    """The named snapshot of the tool store that is recorded into or replayed (letters, digits, ``.``, ``_``,
    ``-``)."""
    tool_store: str | None = None
    """The tool store: a folder (relative to the directory the command ran in) or an fsspec URL; default the
    ``MARA_TOOL_STORE`` variable, else ``~/.cache/mara-bench/tool-store``."""
    tool_store_max_mb: Count | None = None
    """Bound a local store's size in MiB: past it the least recently used entries of unfrozen snapshots go."""
    environ: dict[str, str] = Field(default_factory=lambda: dict(os.environ), repr=False)
    """Where API keys and ``MARA_INDEX`` are read from (tests pass their own)."""

    @field_validator("blocklist", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        items = value.split(",") if isinstance(value, str) else value
        if isinstance(items, list | tuple):
            return tuple(str(item).strip() for item in items if str(item).strip())
        return items

    @field_validator("serper_url", "serpapi_url", "openalex_url", "tool_store")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        """Inspect records ``-T`` options verbatim in the eval log, so none may carry a credential (the store's go
        through ``MARA_TOOL_STORE`` or the storage's own settings, API keys through their variables)."""
        problem = credential_problem(value) if value else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("tool_cache", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        """``-T tool_cache=off`` arrives as ``False``: Inspect reads ``-T`` values as YAML, where off is false."""
        return "off" if value is False else value

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> ToolSettings:
        """The settings given by ``options`` (the rest defaulted); a problem raises ``ToolConfigError``."""
        return validate(cls, options, "tool settings", ToolConfigError)

    def tool_store_location(self) -> str:
        """``tool_store``, else ``MARA_TOOL_STORE``, else the default folder; a folder as the user meant it."""
        named = self.tool_store or self.environ.get(TOOL_STORE_ENV) or DEFAULT_TOOL_STORE
        return named if "://" in named else str(user_path(named))

    def index_path(self) -> str | None:
        """``index``, else ``MARA_INDEX``; a relative path is taken from the directory the command ran in."""
        named = self.index or self.environ.get(INDEX_ENV)
        return str(user_path(named)) if named else None
