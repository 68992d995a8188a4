"""How tools present results to agents, and how a system gets the individual documents back.

A search-like tool returns a ``ToolText``: a ``str`` (what the agent reads -- numbered results, each with a
title, a URL or corpus id, and a snippet) that also carries ``documents``, one text per result or page. MARS
bin-packs those documents into System-1 chunks; ``tool_documents(output)`` returns them for any tool output
(a plain string counts as one document). ``ToolText`` survives ``Toolbox.call`` and ``EpisodeRecorder.tool``
unchanged (``ToolCall.output`` is the same object); serialised episodes keep only the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class ToolText(str):
    """Tool output text plus the documents it was assembled from (and, for search results, each one's source)."""

    documents: tuple[str, ...]
    sources: tuple[str, ...]
    """``sources[i]`` is the URL or corpus id of ``documents[i]`` (empty when the tool has no per-document source)."""
    contents: tuple[str, ...]
    """``contents[i]``: ``documents[i]`` as its corpus stores it (local corpus passages only; else empty)."""
    transient: bool
    """Part of the answer failed in a way that may not repeat (one query of several hit HTTP 429, say): the tool
    cache does not record it."""

    def __new__(
        cls,
        text: str,
        documents: Iterable[str] = (),
        sources: Iterable[str] = (),
        contents: Iterable[str] = (),
        transient: bool = False,
    ) -> ToolText:
        output = super().__new__(cls, text)
        output.documents = tuple(documents)
        output.sources = tuple(sources)
        output.contents = tuple(contents)
        output.transient = transient
        for name, values in (("sources", output.sources), ("contents", output.contents)):
            if values and len(values) != len(output.documents):
                raise ValueError(f"{len(values)} {name} for {len(output.documents)} documents")
        return output


def tool_documents(output: str) -> list[str]:
    """The separate documents of a tool output: a ``ToolText``'s documents, else the whole text (if any)."""
    if isinstance(output, ToolText):
        return list(output.documents)
    return [output] if output else []


@dataclass(frozen=True)
class Hit:
    """One search result, scholarly record or corpus passage."""

    title: str
    source: str
    """URL of a web result, or the corpus id of a local passage."""
    text: str
    """Snippet, abstract or passage text."""
    details: str = ""
    """One extra line, e.g. ``authors · year · venue · cited by N``."""
    contents: str = ""
    """A local corpus passage as its corpus stores it (``Passage.contents``); empty for other hits."""

    def render(self, number: int) -> str:
        label = "URL" if "://" in self.source else "ID"
        lines = [f"[{number}] {self.title or '(untitled)'}", f"{label}: {self.source}"]
        return "\n".join(lines + [line for line in (self.details, self.text) if line])


@dataclass(frozen=True)
class QueryResult:
    """The hits for one query, or the error that query hit (other queries of the same call still answer)."""

    query: str
    hits: Sequence[Hit] = ()
    error: str | None = None
    transient: bool = False
    """The error may not happen again (``TransientToolError``)."""


def render_results(results: Sequence[QueryResult]) -> ToolText:
    """Numbered results under one header per query; hits are numbered across the whole call."""
    sections, documents, sources, contents = [], [], [], []
    for result in results:
        lines = [f'Results for "{result.query}":']
        if result.error:
            lines.append(f"(this query failed: {result.error})")
        elif not result.hits:
            lines.append("(no results)")
        for hit in result.hits:
            documents.append(hit.render(len(documents) + 1))
            sources.append(hit.source)
            contents.append(hit.contents)
            lines.append(documents[-1])
        sections.append("\n\n".join(lines))
    stored = contents if any(contents) else ()
    transient = any(result.transient for result in results)
    return ToolText("\n\n".join(sections), documents, sources, stored, transient)
