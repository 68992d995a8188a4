"""MARS (arXiv:2510.04935): dual-system deep research. System 2 reasons and calls tools with a stated purpose; the tool
outputs are token-counted, First-Fit-Decreasing packed into System-1 budget bins, and distilled by one System-1 call
per bin, all in parallel; the distillates go back to System 2. Python output bypasses System 1 (§3.2.1, algorithm 1,
appendix C.2). Ablation ``sys1=False`` hands System 2 the raw outputs -- the pages themselves (table 5).

Pages: a search or scholar call reads the page behind each of its results (up to 10 per query, 5 papers per scholar
query: the tools' ``k``) with the ``browse`` tool, all at once; a page that cannot be read leaves the result's
snippet (``mara_bench.harness.tools.pages``). ``pages=False`` packs the snippets only. Any other tool output is one document.

Budgets (appendix C, table 7): ``sys1_budget`` is System 1's prompt length (23,552 tokens); each bin holds what is
left after System 1's own prompt framing, measured with System 1's tokenizer when the model behind it exposes one
(``mara_bench.harness.systems.tokens``). ``s1_max_tokens`` / ``s2_max_tokens`` cap each system's response (8,192 / 28,672 in
the ``mars`` protocol). ``-T tools=`` picks System 2's tools (table 4); ``browse`` is never offered to System 2.

Prompts (``harness/prompts/mars/``): the paper's verbatim ones by default (``prompts="paper"``: appendix E.1,
System 2 ~1,240 tokens with the tool description); ``"compact"`` is a short set of ours (NOT the paper's) for tiny
offline models: System 2 gets the tool-call syntax and a one-line tool list, the question last as today; System 1
gets no system prompt, the purpose and the packed pages, then the question last.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, ModelCall, Toolbox
from mara_bench.harness.binpack import first_fit_decreasing
from mara_bench.harness.prompts import fill
from mara_bench.harness.prompts.sets import prompt_choice, prompt_set
from mara_bench.harness.systems.options import AtLeastOne
from mara_bench.harness.systems.outcomes import DistillOutcome, MarsSetup
from mara_bench.harness.systems.parsing import strip_thinking
from mara_bench.harness.systems.tokens import TokenMeter, token_meter
from mara_bench.harness.systems.toolloop import ToolRequest, raw_result, tool_description, tool_loop
from mara_bench.harness.tools.pages import Document, read_pages

SYSTEM2 = "system2"
SYSTEM1 = "system1"
ROLES = (SYSTEM2, SYSTEM1)
TOOLS = ("search", "scholar", "python")
BYPASS_TOOLS = ("python",)
"""Tools whose output goes straight back to System 2."""
PAGE_TOOLS = ("search", "scholar")
"""Tools whose results' pages System 1 reads."""
READER = "browse"
HELPER_TOOLS = (READER,)
SAMPLING_OPTIONS = {"s1_max_tokens": (SYSTEM1, "max_tokens"), "s2_max_tokens": (SYSTEM2, "max_tokens")}
"""Options that set one role's generation setting: option -> (role, ``GenerateConfig`` field)."""
"""Tools MARS calls itself (to read pages), never offered to System 2."""

PAGE_SEPARATOR = "\n\n"

DEFAULT_PROMPTS = "paper"
Prompts = prompt_choice("mars", DEFAULT_PROMPTS)
"""The two systems' prompt sets (``harness/prompts/mars/``): ``paper``, MARS's verbatim ones (the default, for every
evaluation); ``compact``, ours (NOT the paper's), short, for tiny offline models that cannot copy a name out of a
~1.2k-token prompt."""


def system2_prompt(offered: list[str], prompts: str = DEFAULT_PROMPTS) -> str:
    """System 2's system prompt offering the tools ``offered``: its ``{tool description}`` is the tools' list with
    our call format, its ``{tool names}`` (the compact set's) the names on one line."""
    template = prompt_set("mars", prompts).system_prompt(SYSTEM2) or ""
    if "{tool names}" in template:
        return fill(template, {"tool names": ", ".join(offered)})
    return fill(template, {"tool description": tool_description(offered)})


def system1_messages(
    question: str, purpose: str, pages: list[str], prompts: str = DEFAULT_PROMPTS
) -> list[dict[str, str]]:
    """One System-1 call's messages: the call's purpose and its bin of pages, for the question."""
    block = f"Purpose of the tool call: {purpose or '(not stated)'}\n\n" + PAGE_SEPARATOR.join(pages)
    return prompt_set("mars", prompts).messages(SYSTEM1, {"tool outputs": block, "question": question})


def page_capacity(
    question: str, purpose: str, budget: int, meter: TokenMeter, prompts: str = DEFAULT_PROMPTS
) -> int:
    """Tokens of pages one System-1 call can take: ``budget`` minus System 1's prompt framing."""
    framing = system1_messages(question, purpose, [], prompts)
    capacity = budget - sum(meter.count(message["content"]) for message in framing)
    if capacity <= 0:
        raise ValueError(
            f"sys1_budget={budget} tokens leaves no room for tool outputs after System 1's prompt"
        )
    return capacity


def pack_pages(pages: list[str], capacity: int, meter: TokenMeter) -> list[tuple[list[int], list[str], bool]]:
    """FFD bins of pages as (page indices, page texts, truncated?); a page over ``capacity`` is truncated alone."""
    lengths = [meter.count(page) for page in pages]
    packed = []
    for indices in first_fit_decreasing(lengths, capacity):
        over = len(indices) == 1 and lengths[indices[0]] > capacity
        texts = [meter.truncate(pages[indices[0]], capacity)] if over else [pages[i] for i in indices]
        packed.append((indices, texts, over))
    return packed


class _Distiller:
    """System 1 for one episode: reads a request's pages, packs them and distils each bin in parallel."""

    def __init__(
        self,
        recorder: EpisodeRecorder,
        meter: TokenMeter,
        budget: int,
        *,
        pages: bool,
        sampling: dict[str, Any],
        prompts: str,
    ):
        self.recorder = recorder
        self.prompts = prompts
        self.meter = meter
        self.budget = budget
        self.pages = pages and READER in recorder.toolbox
        self.sampling = sampling

    async def documents(self, call: ModelCall, request: ToolRequest) -> list[Document]:
        """The request's results as documents, each web result read in full when ``pages`` is on."""

        async def fetch(url: str) -> str | None:
            page = await self.recorder.tool(
                READER, call=call.id, turn=call.turn, origin=request.name, url=url
            )
            return page.output if page.error is None else None

        fetcher = fetch if self.reads_pages(request) else None
        outputs = [result.output for result in request.results if result.error is None]
        documents = await asyncio.gather(*(read_pages(out, fetcher) for out in outputs))
        return [document for group in documents for document in group if document.text]

    def reads_pages(self, request: ToolRequest) -> bool:
        return self.pages and request.name in PAGE_TOOLS

    async def raw(self, call: ModelCall, request: ToolRequest) -> str:
        """Without System 1 (table 5): what System 2 would read itself -- the pages, else the tool's own text."""
        if not self.reads_pages(request):
            return raw_result(request)
        errors = [f"Tool error ({r.name}): {r.error}" for r in request.results if r.error is not None]
        return PAGE_SEPARATOR.join([*errors, *(d.text for d in await self.documents(call, request))])

    async def distil(self, call: ModelCall, request: ToolRequest, index: int) -> str:
        documents = await self.documents(call, request)
        pages = [document.text for document in documents]
        errors = [f"Tool error ({r.name}): {r.error}" for r in request.results if r.error is not None]
        if not pages:
            return "\n\n".join(errors) or "(the tool returned nothing)"
        question = self.recorder.episode.question
        capacity = page_capacity(question, request.purpose, self.budget, self.meter, self.prompts)
        bins = pack_pages(pages, capacity, self.meter)

        async def one_bin(indices: list[int], texts: list[str], truncated: bool) -> str:
            messages = system1_messages(question, request.purpose, texts, self.prompts)
            full_pages = sum(documents[i].page for i in indices)
            meta = DistillOutcome(index, indices, truncated, full_pages).data()
            sys1_call = await self.recorder.ask(
                SYSTEM1, messages, parent=call.id, turn=call.turn, meta=meta, **self.sampling
            )
            return strip_thinking(sys1_call.reply.text)

        distillates = await asyncio.gather(*(one_bin(*packed) for packed in bins))
        return "\n\n".join([*errors, *distillates])


async def run(
    question: str,
    chat: Chat,
    toolbox: Toolbox,
    *,
    max_turns: AtLeastOne = 10,
    sys1: bool = True,
    sys1_budget: AtLeastOne = 23552,
    s1_max_tokens: AtLeastOne | None = None,
    s2_max_tokens: AtLeastOne | None = None,
    pages: bool = True,
    tokenizer: str | None = None,
    prompts: Prompts = DEFAULT_PROMPTS,
) -> Episode:
    """One MARS rollout; ``episode.final_answer`` is System 2's ``<answer>`` (``None`` if it never answered)."""
    recorder = EpisodeRecorder("mars", question, chat, toolbox)
    meter = token_meter(chat, tokenizer, role=SYSTEM1)
    # a budget that System 1's own prompt fills fails up front
    page_capacity(question, "", sys1_budget, meter, prompts)
    distiller = _Distiller(
        recorder, meter, sys1_budget, pages=pages, sampling=_max_tokens(s1_max_tokens), prompts=prompts
    )
    reading = "pages" if distiller.pages else "snippets"
    MarsSetup(sys1, meter.description, sys1_budget, reading).record(recorder.episode.meta)

    async def observe(call: ModelCall, requests: list[ToolRequest]) -> str:
        async def one(index: int, request: ToolRequest) -> str:
            if request.error is not None or request.name in BYPASS_TOOLS:
                return raw_result(request)
            if not sys1:
                return await distiller.raw(call, request)
            return await distiller.distil(call, request, index)

        sections = await asyncio.gather(*(one(i, request) for i, request in enumerate(requests)))
        return "\n\n".join(sections)

    offered = [name for name in toolbox.names() if name not in HELPER_TOOLS]
    await tool_loop(
        recorder,
        role=SYSTEM2,
        system_prompt=system2_prompt(offered, prompts),
        max_turns=max_turns,
        observe=observe,
        sampling=_max_tokens(s2_max_tokens),
        offered=offered,
    )
    return recorder.episode


def _max_tokens(limit: int | None) -> dict[str, Any]:
    return {} if limit is None else {"max_tokens": limit}
