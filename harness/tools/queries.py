"""One tool call, several queries: run them concurrently, drop blocked and duplicate results, render the text.

MARS's System 2 may put several queries in one search or scholar call (``query`` is a string or a list).
A query that fails is reported in its section while the others still answer (a transient failure marks the
answer ``transient``, so the tool cache does not keep it); if every query fails the call raises ``ToolError``
(``TransientToolError`` when any failure was transient).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from mara_bench.core.episodes import ToolError, TransientToolError
from mara_bench.harness.toolbase.blocklist import Blocklist
from mara_bench.harness.toolbase.output import Hit, QueryResult, ToolText, render_results

SearchOne = Callable[[str], Awaitable[list[Hit]]]


def normalize_queries(tool: str, query: str | Sequence[str], max_queries: int) -> list[str]:
    """Validate the ``query`` argument: a non-empty string or a list of at most ``max_queries`` of them."""
    queries = [query] if isinstance(query, str) else list(query) if isinstance(query, list | tuple) else None
    if queries is None or not all(isinstance(item, str) for item in queries):
        raise ToolError(f"{tool}: 'query' must be a string or a list of strings")
    queries = [item.strip() for item in queries if item.strip()]
    if not queries:
        raise ToolError(f"{tool}: 'query' is empty")
    if len(queries) > max_queries:
        raise ToolError(f"{tool}: at most {max_queries} queries per call, got {len(queries)}")
    return queries


async def answer_queries(
    tool: str,
    query: str | Sequence[str],
    search_one: SearchOne,
    *,
    max_queries: int,
    blocklist: Blocklist | None = None,
) -> ToolText:
    """Run ``search_one`` for every query and render all results as one numbered ``ToolText``."""
    queries = normalize_queries(tool, query, max_queries)
    outcomes = await asyncio.gather(*(search_one(item) for item in queries), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(outcome, ToolError):
            raise outcome
    failed = [outcome for outcome in outcomes if isinstance(outcome, ToolError)]
    if len(failed) == len(queries):
        message = "; ".join(dict.fromkeys(map(str, failed)))
        if any(isinstance(error, TransientToolError) for error in failed):
            raise TransientToolError(message)
        raise ToolError(message)
    seen: set[str] = set()
    results = []
    for item, outcome in zip(queries, outcomes, strict=True):
        if isinstance(outcome, ToolError):
            results.append(
                QueryResult(item, error=str(outcome), transient=isinstance(outcome, TransientToolError))
            )
            continue
        kept = [
            hit
            for hit in outcome
            if not (blocklist and blocklist.blocks(hit.source))
            and not (hit.source in seen or seen.add(hit.source))
        ]
        results.append(QueryResult(item, kept))
    return render_results(results)
