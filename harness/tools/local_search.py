"""Search over a local corpus index (``mara_bench.harness.retrieval``): the embedded default search backend, and M-ASK's
``retrieve``. Passages come back as ``Hit``s with the corpus id as their source."""

from __future__ import annotations

import asyncio

from mara_bench.harness.retrieval import RetrievalIndex
from mara_bench.harness.toolbase.output import Hit


async def corpus_search(query: str, *, index: RetrievalIndex, k: int) -> list[Hit]:
    passages = await asyncio.to_thread(index.search, query, k)
    return [
        Hit(title=passage.title, source=passage.id, text=passage.text, contents=passage.contents)
        for passage in passages
    ]
