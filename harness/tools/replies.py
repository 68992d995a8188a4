"""The shapes of the search backends' JSON answers (Serper, SerpAPI web and Scholar, OpenAlex), as pydantic
models: ``mara_bench.harness.tools.web.get_json`` checks every answer against one before the backend reads it, so valid
JSON of another shape (``{"organic": [1, "x", null]}``, a list, a string where a list belongs) is a
``ToolError`` the agent reads, not a crash. Only the fields we read are declared; others are ignored, and
every field may be missing or null (services leave them out freely)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Reply(BaseModel):
    """Base of the answer models: unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class SerperResult(Reply):
    title: str | None = None
    link: str | None = None
    snippet: str | None = None
    date: str | None = None


class SerperReply(Reply):
    organic: list[SerperResult] = []


class SerpApiCitedBy(Reply):
    total: int | None = None


class SerpApiInlineLinks(Reply):
    cited_by: SerpApiCitedBy | None = None


class SerpApiPublicationInfo(Reply):
    summary: str | None = None


class SerpApiResult(Reply):
    """One organic result of Google (web) or Google Scholar through SerpAPI."""

    title: str | None = None
    link: str | None = None
    snippet: str | None = None
    date: str | None = None
    result_id: str | None = None
    publication_info: SerpApiPublicationInfo | None = None
    """Scholar: authors · venue · year."""
    inline_links: SerpApiInlineLinks | None = None
    """Scholar: ``cited_by.total``."""


class SerpApiReply(Reply):
    organic_results: list[SerpApiResult] = []
    error: str | None = None
    """Set when the search failed, or (``hasn't returned any results``) found nothing."""


class OpenAlexAuthor(Reply):
    display_name: str | None = None


class OpenAlexAuthorship(Reply):
    author: OpenAlexAuthor | None = None


class OpenAlexSource(Reply):
    display_name: str | None = None


class OpenAlexLocation(Reply):
    source: OpenAlexSource | None = None
    landing_page_url: str | None = None


class OpenAlexWork(Reply):
    display_name: str | None = None
    title: str | None = None
    doi: str | None = None
    id: str | None = None
    publication_year: int | None = None
    cited_by_count: int | None = None
    authorships: list[OpenAlexAuthorship] = []
    primary_location: OpenAlexLocation | None = None
    abstract_inverted_index: dict[str, list[int]] | None = None
    """The abstract as ``{word: [positions]}``."""


class OpenAlexReply(Reply):
    results: list[OpenAlexWork] = []
