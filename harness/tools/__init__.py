"""Agent tools: web ``search`` (Serper, SerpAPI, or the local corpus index), ``retrieve`` (local corpus),
``scholar`` (OpenAlex or SerpAPI Google Scholar), ``browse`` (page main text) and a sandboxed ``python``.

    toolbox = build_toolbox(["search", "scholar", "python"], search_backend="serper", k=10)
    text = await toolbox.call("search", query=["first query", "second query"])
    pages = tool_documents(text)      # one text per result, for MARS's System-1 bin packing

Tool arguments: ``search(query)``, ``retrieve(query)``, ``scholar(query)`` -- ``query`` is a string or a list of
up to ``max_queries`` strings; ``browse(url)``; ``python(code)``. Every tool returns text for the agent; search,
retrieve, scholar and browse return a ``ToolText`` whose ``documents`` are the separate results/pages. Web results
pass the leak blocklist; failures raise ``mara_bench.core.episodes.ToolError``. Settings: ``ToolSettings``.

The names below load on first use (``mara_bench.harness.tools.toolbox`` builds the tools, each tool's module imported when
that tool is built), so importing ``mara_bench.harness.tools`` or one of its light modules loads no web or retrieval stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mara_bench.core.named import lazy_attributes

if TYPE_CHECKING:
    from mara_bench.harness.toolbase.blocklist import DEFAULT_BLOCKLIST, Blocklist
    from mara_bench.harness.toolbase.output import Hit, ToolText, tool_documents
    from mara_bench.harness.toolbase.settings import ToolConfigError, ToolSettings
    from mara_bench.harness.tools.toolbox import TOOL_NAMES, build_toolbox

_HOMES = {
    "DEFAULT_BLOCKLIST": "mara_bench.harness.toolbase.blocklist",
    "Blocklist": "mara_bench.harness.toolbase.blocklist",
    "Hit": "mara_bench.harness.toolbase.output",
    "ToolText": "mara_bench.harness.toolbase.output",
    "tool_documents": "mara_bench.harness.toolbase.output",
    "ToolConfigError": "mara_bench.harness.toolbase.settings",
    "ToolSettings": "mara_bench.harness.toolbase.settings",
    "TOOL_NAMES": "mara_bench.harness.tools.toolbox",
    "build_toolbox": "mara_bench.harness.tools.toolbox",
}


__getattr__ = lazy_attributes(__name__, _HOMES)


__all__ = [
    "DEFAULT_BLOCKLIST",
    "TOOL_NAMES",
    "Blocklist",
    "Hit",
    "ToolConfigError",
    "ToolSettings",
    "ToolText",
    "build_toolbox",
    "tool_documents",
]
