"""``build_toolbox(names, **settings)``: the named tools, configured and checked before any sample runs.

Each tool's module is imported when that tool is built, so a system loads only the tools it uses: ``python`` never
loads the web stack, ``browse`` loads trafilatura and pypdf, local ``search``/``retrieve`` load the retrieval index
(numpy, faiss or bm25s), and a tool-less system (``direct``, ``vc``) imports none of them.

With ``tool_cache`` on, every tool sits behind the tool-response store here (``mara_bench.harness.toolcache``), the one seam
evaluation, training and MARS's own page reads share; in ``replay`` no live tool is built at all (no API key,
index or sandbox needed, nothing can reach the network).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mara_bench.core.episodes import Toolbox, ToolFunction
from mara_bench.harness.toolbase.blocklist import Blocklist
from mara_bench.harness.toolbase.settings import INDEX_ENV, ToolConfigError, ToolSettings
from mara_bench.harness.tools.addresses import AddressPolicy
from mara_bench.harness.tools.queries import SearchOne, answer_queries
from mara_bench.harness.tools.web import HttpSettings

if TYPE_CHECKING:
    from mara_bench.harness.toolcache import ToolCache

TOOL_NAMES = ("search", "retrieve", "scholar", "browse", "python")
CACHE_SETTINGS = ("tool_cache", "tool_snapshot", "tool_store", "tool_store_max_mb")
"""The settings of the tool cache alone (what ``with_tool_cache`` takes)."""
API_KEYS = {"serper": "SERPER_API_KEY", "serpapi": "SERPAPI_API_KEY"}
WEB_K, CORPUS_K = 10, 5


def _api_key(settings: ToolSettings, tool: str, backend: str, option: str) -> str:
    variable = API_KEYS[backend]
    key = settings.environ.get(variable, "").strip()
    if not key:
        others = {"search_backend": "local|serper|serpapi", "scholar_backend": "openalex|serpapi"}[option]
        raise ToolConfigError(
            f"tool {tool!r} with {option}={backend} needs {variable} in the environment "
            f"(or choose another backend with -T {option}={others})"
        )
    return key


def _corpus_searcher(settings: ToolSettings, tool: str) -> SearchOne:
    path = settings.index_path()
    if not path:
        raise ToolConfigError(
            f"tool {tool!r} searches a local corpus index: pass -T index=DIR or set {INDEX_ENV} "
            "(build one with `mara index build CORPUS.jsonl DIR/`)"
        )
    from mara_bench.harness.retrieval import RetrievalError, open_index
    from mara_bench.harness.tools.local_search import corpus_search

    try:
        index = open_index(str(path), settings.index_model)
    except RetrievalError as err:
        raise ToolConfigError(f"tool {tool!r}: {err}") from err
    return functools.partial(corpus_search, index=index, k=settings.k or CORPUS_K)


def corpus_index_record(names: list[str], **options: Any) -> dict[str, Any] | None:
    """What the local corpus index that tools ``names`` search is (directory + manifest: kind, size, corpus hash,
    model, FAISS index type and its recall@k vs Flat), for the eval log; None when no tool searches one."""
    settings = ToolSettings.from_options(options)
    local = "retrieve" in names or ("search" in names and settings.search_backend == "local")
    path = settings.index_path() if local else None
    if not path:
        return None
    from mara_bench.harness.retrieval import open_index

    return {"directory": path, **dataclasses.asdict(open_index(path, settings.index_model).manifest)}


def _search_one(settings: ToolSettings, http: HttpSettings) -> SearchOne:
    backend, k = settings.search_backend, settings.k or WEB_K
    if backend == "local":
        return _corpus_searcher(settings, "search")
    from mara_bench.harness.tools.web_search import serpapi_search, serper_search

    key = _api_key(settings, "search", backend, "search_backend")
    if backend == "serper":
        return functools.partial(serper_search, k=k, api_key=key, url=settings.serper_url, http=http)
    return functools.partial(serpapi_search, k=k, api_key=key, url=settings.serpapi_url, http=http)


def _scholar_one(settings: ToolSettings, http: HttpSettings) -> SearchOne:
    from mara_bench.harness.tools.scholar import openalex_scholar, serpapi_scholar

    k = settings.scholar_k
    if settings.scholar_backend == "serpapi":
        key = _api_key(settings, "scholar", "serpapi", "scholar_backend")
        return functools.partial(serpapi_scholar, k=k, api_key=key, url=settings.serpapi_url, http=http)
    return functools.partial(openalex_scholar, k=k, url=settings.openalex_url, http=http)


def _query_tool(
    name: str, search_one: SearchOne, settings: ToolSettings, blocklist: Blocklist | None
) -> ToolFunction:
    async def tool(query: str | list[str]) -> str:
        return await answer_queries(
            name, query, search_one, max_queries=settings.max_queries, blocklist=blocklist
        )

    return tool


def build_toolbox(names: list[str], **options: Any) -> Toolbox:
    """A ``Toolbox`` with the named tools, configured by ``options`` (see ``ToolSettings``).

    Unknown names or settings, a missing API key or a missing/broken index raise ``ToolConfigError`` here,
    before any sample runs.
    """
    unknown = [name for name in names if name not in TOOL_NAMES]
    if unknown:
        raise ToolConfigError(
            f"unknown tool(s) {', '.join(map(repr, unknown))}; available: {', '.join(TOOL_NAMES)}"
        )
    settings = ToolSettings.from_options(options)
    http = HttpSettings(
        timeout=settings.http_timeout,
        attempts=settings.http_attempts,
        backoff=settings.http_backoff,
        deadline=settings.web_deadline,
        redirects=AddressPolicy(allow_private=settings.browse_allow_private),
    )
    try:
        blocklist = Blocklist(settings.blocklist)
    except ValueError as err:
        raise ToolConfigError(f"tool setting blocklist: {err}") from err
    if settings.tool_cache == "replay":
        return _cached_toolbox(list(dict.fromkeys(names)), settings, builders=None)
    builders = {
        "search": lambda: _query_tool(
            "search",
            _search_one(settings, http),
            settings,
            None if settings.search_backend == "local" else blocklist,
        ),
        "retrieve": lambda: _query_tool("retrieve", _corpus_searcher(settings, "retrieve"), settings, None),
        "scholar": lambda: _query_tool("scholar", _scholar_one(settings, http), settings, blocklist),
        "browse": lambda: _browse_tool(settings, http, blocklist),
        "python": lambda: _python_tool(settings),
    }
    if settings.tool_cache != "off":
        return _cached_toolbox(list(dict.fromkeys(names)), settings, builders)
    return Toolbox({name: builders[name]() for name in dict.fromkeys(names)})


def _cached_toolbox(
    names: list[str], settings: ToolSettings, builders: dict[str, Callable[[], ToolFunction]] | None
) -> Toolbox:
    """The named tools behind the run's tool cache; ``builders`` ``None``: replay only, no live tool built."""
    from mara_bench.harness.toolcache import tool_variant

    cache = _open_cache(settings)
    tools = {
        name: cache.wrap(name, builders[name]() if builders else None, tool_variant(name, settings))
        for name in names
    }
    return Toolbox(tools, cache=cache)


def with_tool_cache(toolbox: Toolbox, **options: Any) -> Toolbox:
    """``toolbox`` (a task's own tools, say) behind the tool cache that ``options`` (the ``tool_cache*`` and
    ``tool_snapshot``/``tool_store`` settings only) configure; ``toolbox`` itself when the cache is off. The task
    that built the tools decides their settings, so its responses are keyed by tool name and arguments alone."""
    settings = ToolSettings.from_options(options)
    if settings.tool_cache == "off":
        return toolbox
    cache = _open_cache(settings)
    live = settings.tool_cache != "replay"
    tools = {
        name: cache.wrap(name, functools.partial(toolbox.call, name) if live else None, {})
        for name in toolbox.names()
    }
    return Toolbox(tools, cache=cache)


def _open_cache(settings: ToolSettings) -> ToolCache:
    from mara_bench.harness.toolcache import open_cache

    return open_cache(
        settings.tool_cache,
        settings.tool_snapshot,
        settings.tool_store_location(),
        settings.tool_store_max_mb * 2**20 if settings.tool_store_max_mb else None,
    )


def _browse_tool(settings: ToolSettings, http: HttpSettings, blocklist: Blocklist) -> ToolFunction:
    from mara_bench.harness.tools.browse import browse
    from mara_bench.harness.tools.page_worker import warm_up

    warm_up()  # page readers start now, not in the first call's extract deadline

    return functools.partial(
        browse,
        blocklist=blocklist,
        max_chars=settings.browse_max_chars,
        max_bytes=settings.browse_max_bytes,
        extract_seconds=settings.browse_extract_seconds,
        http=http,
        addresses=AddressPolicy(allow_private=settings.browse_allow_private),
    )


def _python_tool(settings: ToolSettings) -> ToolFunction:
    """The python tool isolated as ``python_sandbox`` says; bwrap is checked here, before any sample runs."""
    import mara_bench.harness.tools.bwrap as bwrap
    from mara_bench.harness.tools.python_sandbox import (
        SandboxLimits,
        run_python,
        state_protection,
        warn_unisolated,
    )

    limits = SandboxLimits(
        timeout=settings.python_timeout,
        memory_mb=settings.python_memory_mb,
        max_output=settings.python_max_output,
    )
    if settings.python_sandbox == "inspect":
        from mara_bench.harness.tools.inspect_sandbox import DEFAULT_EXECUTABLE, run_python_in_inspect_sandbox

        executable = settings.python_executable or DEFAULT_EXECUTABLE
        return functools.partial(run_python_in_inspect_sandbox, limits=limits, executable=executable)
    executable = settings.python_executable or sys.executable
    if settings.python_sandbox == "unisolated":
        warn_unisolated()
    elif problem := bwrap.unavailable_reason(executable):
        opt_out = "-T python_sandbox=unisolated"
        remedy = (
            f"; to run code without isolation, use {opt_out}"
            if bwrap.installed()
            else f": install the Debian package {bwrap.PACKAGE} (apt-get install {bwrap.PACKAGE}), or run code "
            f"without isolation with {opt_out}"
        )
        raise ToolConfigError(f"tool 'python' isolates code with bubblewrap, but {problem}{remedy}")
    else:
        state_protection(executable)
    return functools.partial(
        run_python, limits=limits, executable=executable, isolation=settings.python_sandbox
    )
