"""MATPO (arXiv:2510.04678; public code mzf666/MATPO): a planner whose only tool is ``search_and_browse(subtask)``; each call
runs a nested worker rollout (search + scrape tools) whose first message recaps the user's query ("user query
recapping") and which always ends with the structured final summary; the summary, thinking and any tool-use block
removed, is the planner's tool response. The planner's user message asks for the answer in ``\\boxed{}``.

Tool calls use the paper's MCP XML format (``<use_mcp_tool>`` with ``<server_name>``, ``<tool_name>``, JSON
``<arguments>``), one per message; tool responses come back as user messages. The worker's ``google_search`` /
``scrape`` map to our ``search`` / ``browse`` tools. A worker that reaches its turn limit or is cut off at the token
limit is asked for the summary with the repository's "failed" instruction. Every worker call's parent is the planner
call that delegated the subtask (the trainer broadcasts the planner's advantage along that link);
``WorkerOutcome.subtask`` numbers them.

Context (paper §"Rollout Summary Mechanism"): with ``worker_context_tokens`` set, the worker's context is measured
after each tool response and before the summary (the worker model's tokenizer when ``local/`` serves it); when it
and the summary prompt would leave less than ``summary_reserve`` tokens for the summary, the latest messages are
removed until they do and the worker is asked for its summary at once (``WorkerOutcome.trimmed``). A planner that
reaches ``max_turns`` gets the authors' main-agent summary prompt with its "failed" instruction and answers from what
it has (the forced final answer, ``PlannerOutcome.forced``).

Prompts: ``prompts="paper"`` (the default, for every evaluation) sends the authors' verbatim prompts; ``"compact"``
sends short prompts of ours (NOT the paper's, ``harness/prompts/matpo/compact/``) for tiny offline models that cannot
copy a name past the verbatim system prompts (~2,800 / 4,300 tokens of the tiny tokenizer): the same ``<use_mcp_tool>`` block
described in one line, and the question (planner) or the subtask (worker) last, right before the generation.

Worker summary request: the worker's ``main_query`` and subtask are passed whole (the default,
``summary_query="whole"``). MATPO's released code (``final_summary`` in mzf666/MATPO@3c41d62
``verl/workers/rollout/sglang_rollout/sglang_rollout.py``) re-reads both from the recap with the patterns
``The main task is: "(.*?)"`` and ``Your current subtask is: "(.*?)"``, so a query or subtask holding a double quote
reaches the summary request cut at its first one; ``summary_query="released"`` (``-T summary_query=released``,
with the paper prompts and the recap) does the same.

Ablations (paper figure 6): ``summary=False`` returns the worker's raw last message to the planner (thinking and
tool-use blocks included); ``recap=False`` gives the worker the subtask alone, without the user's query.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, Message, ModelCall, Toolbox
from mara_bench.harness.prompts import fill
from mara_bench.harness.prompts.sets import PromptSet, prompt_choice, prompt_set
from mara_bench.harness.systems.options import AtLeastOne
from mara_bench.harness.systems.outcomes import MatpoOutcome, PlannerOutcome, WorkerOutcome
from mara_bench.harness.systems.parsing import last_boxed, strip_thinking
from mara_bench.harness.systems.tokens import TokenMeter, token_meter

PLANNER = "planner"
WORKER = "worker"
ROLES = (PLANNER, WORKER)
TOOLS = ("search", "browse")
PLANNER_TOOL = "search_and_browse"
PLANNER_SERVER = "browsing_agent"
"""The MCP server the paper's planner prompt lists ``search_and_browse`` under (the parser does not check it)."""
WORKER_TOOLS = {"google_search": ("search", "q", "query"), "scrape": ("browse", "url", "url")}
"""Worker tool name → (our tool, the paper's argument name, our argument name)."""

DEFAULT_PROMPTS = "paper"
Prompts = prompt_choice("matpo", DEFAULT_PROMPTS)
"""The prompt sets (``harness/prompts/matpo/``): ``paper``, MATPO's verbatim prompts (the default); ``compact``,
ours, for tiny offline models. Each has the roles ``planner`` (system prompt, user template) and ``worker`` (system
prompt, the recap as user template) and the pieces ``planner_summary``, ``worker_summary`` (the final summary
requests) and ``planner_failed``, ``worker_failed`` (their "failed" instructions); ``tool_response`` is shared."""


def planner_summary_prompt(prompts: PromptSet, main_query: str, failed: bool) -> str:
    """The planner's final summary request (MATPO's main-agent ``generate_agent_summarize_prompt``)."""
    return fill(
        prompts.piece("planner_summary"),
        {"task_description": main_query, "failed_instruction": _failed(prompts, "planner_failed", failed)},
    )


def worker_summary_prompt(prompts: PromptSet, main_query: str, subtask: str, failed: bool) -> str:
    """A worker's final summary request (MATPO's browsing-agent ``generate_agent_summarize_prompt``)."""
    return fill(
        prompts.piece("worker_summary"),
        {
            "main_query": main_query,
            "task_description": subtask,
            "failed_instruction": _failed(prompts, "worker_failed", failed),
        },
    )


SummaryQuery = Literal["whole", "released"]
"""What the worker summary request recaps: ``whole``, the query and subtask as given (the default); ``released``,
MATPO's released code's re-reading of them from the recap (module docstring)."""
_RELEASED_QUERY = re.compile(r'The main task is: "(.*?)"', re.DOTALL)
_RELEASED_SUBTASK = re.compile(r'Your current subtask is: "(.*?)"', re.DOTALL)


def released_summary_inputs(recap: str) -> tuple[str, str]:
    """(main query, subtask) as MATPO's released ``final_summary`` reads them from a worker's recap message: each
    up to its first double quote (the whole recap as the subtask when it has none; the main query ``None``, printed
    as such, when it has none)."""
    query, subtask = _RELEASED_QUERY.search(recap), _RELEASED_SUBTASK.search(recap)
    return (query.group(1) if query else "None"), (
        subtask.group(1) if subtask and subtask.group(1) else recap
    )


def _failed(prompts: PromptSet, piece: str, failed: bool) -> str:
    return prompts.piece(piece).strip() if failed else ""


_TOOL_USE = re.compile(r"<use_mcp_tool>(.*?)</use_mcp_tool>", re.DOTALL)


@dataclass
class McpCall:
    """One parsed ``<use_mcp_tool>`` block (``error`` says why it could not be used)."""

    tool: str
    arguments: dict[str, Any]
    error: str | None = None


def parse_tool_use(text: str) -> McpCall | None:
    """The first ``<use_mcp_tool>`` block of a reply (thinking excluded), or ``None`` when there is none."""
    match = _TOOL_USE.search(strip_thinking(text))
    if match is None:
        return None
    body = match.group(1)
    tool = re.search(r"<tool_name>(.*?)</tool_name>", body, re.DOTALL)
    arguments = re.search(r"<arguments>(.*?)</arguments>", body, re.DOTALL)
    if tool is None or arguments is None:
        return McpCall("?", {}, "a tool use needs <tool_name> and <arguments>")
    try:
        parsed = json.loads(arguments.group(1))
    except json.JSONDecodeError as err:
        return McpCall(tool.group(1).strip(), {}, f"<arguments> is not valid JSON ({err.msg})")
    if not isinstance(parsed, dict):
        return McpCall(tool.group(1).strip(), {}, "<arguments> must be a JSON object")
    return McpCall(tool.group(1).strip(), parsed)


def _user(content: str) -> Message:
    return {"role": "user", "content": content}


def _tool_response(prompts: PromptSet, text: str) -> Message:
    return _user(fill(prompts.piece("tool_response"), {"result": text}))


async def _worker_tool(recorder: EpisodeRecorder, call: ModelCall, use: McpCall) -> str:
    if use.error is not None:
        return f"Tool error: {use.error}"
    if use.tool not in WORKER_TOOLS:
        return f"Tool error: unknown tool {use.tool!r}; available tools: {', '.join(sorted(WORKER_TOOLS))}"
    ours, theirs, argument = WORKER_TOOLS[use.tool]
    if theirs not in use.arguments:
        return f"Tool error: {use.tool} needs the argument {theirs!r}"
    result = await recorder.tool(ours, call=call.id, turn=call.turn, **{argument: str(use.arguments[theirs])})
    return result.output if result.error is None else f"Tool error: {result.error}"


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker rollout runs (the ``run`` options of the same names)."""

    max_turns: int
    summary: bool = True
    recap: bool = True
    context_tokens: int | None = None
    summary_reserve: int = 4096
    prompts: PromptSet = field(default_factory=lambda: prompt_set("matpo", DEFAULT_PROMPTS))
    summary_query: SummaryQuery = "whole"


def trim_for_summary(
    messages: list[Message], summary_prompt: str, meter: TokenMeter, context: int, reserve: int
) -> list[Message]:
    """``messages`` with the latest ones removed until they and ``summary_prompt`` leave ``reserve`` tokens of
    ``context`` (the system prompt and the first user message always stay)."""
    kept = list(messages)

    def used() -> int:
        return sum(meter.count(m["content"]) for m in kept) + meter.count(summary_prompt)

    while len(kept) > 2 and used() + reserve > context:
        kept.pop()
    return kept


def _worker_opening(main_query: str, subtask: str, settings: WorkerSettings) -> list[Message]:
    """The worker's system prompt and first message: the recap of the user's query (``recap=False``: the subtask)."""
    opening = settings.prompts.messages(WORKER, {"main_query": main_query, "task_description": subtask})
    return opening if settings.recap else [*opening[:-1], _user(subtask)]


async def _worker(
    recorder: EpisodeRecorder,
    planner_call: ModelCall,
    main_query: str,
    subtask: str,
    index: int,
    settings: WorkerSettings,
    meter: TokenMeter,
) -> str:
    """A nested worker rollout for ``subtask``; returns its final summary without thinking or tool-use blocks
    (``summary=False``: its raw last message)."""
    messages = _worker_opening(main_query, subtask, settings)
    finished = trimmed = False
    last_reply = ""
    recapped = (main_query, subtask)
    if settings.summary_query == "released":
        recapped = released_summary_inputs(messages[-1]["content"])

    def summary_prompt(failed: bool) -> str:
        return worker_summary_prompt(settings.prompts, *recapped, failed)

    for _ in range(settings.max_turns):
        call = await recorder.ask(
            WORKER, messages, parent=planner_call.id, turn=planner_call.turn, meta=WorkerOutcome(index).data()
        )
        last_reply = call.reply.text
        messages = [*messages, {"role": "assistant", "content": call.reply.text}]
        if call.reply.finish_reason == "length":
            break
        use = parse_tool_use(call.reply.text)
        if use is None:
            finished = True
            break
        messages = [*messages, _tool_response(settings.prompts, await _worker_tool(recorder, call, use))]
        if settings.context_tokens is not None:
            fitted = trim_for_summary(
                messages, summary_prompt(True), meter, settings.context_tokens, settings.summary_reserve
            )
            if len(fitted) < len(messages):
                messages, trimmed = fitted, True
                break
    if not settings.summary:
        return last_reply
    if settings.context_tokens is not None and not trimmed:  # e.g. a reply cut off at the token limit
        fitted = trim_for_summary(
            messages, summary_prompt(not finished), meter, settings.context_tokens, settings.summary_reserve
        )
        messages, trimmed = fitted, len(fitted) < len(messages)
    summary = await recorder.ask(
        WORKER,
        [*messages, _user(summary_prompt(not finished))],
        parent=planner_call.id,
        turn=planner_call.turn,
        meta=WorkerOutcome(index, summary=True, finished=finished, trimmed=trimmed).data(),
    )
    return _TOOL_USE.sub("", strip_thinking(summary.reply.text)).strip()


async def run(
    question: str,
    chat: Chat,
    toolbox: Toolbox,
    *,
    max_turns: AtLeastOne = 10,
    worker_max_turns: AtLeastOne = 10,
    summary: bool = True,
    recap: bool = True,
    worker_context_tokens: AtLeastOne | None = None,
    summary_reserve: AtLeastOne = 4096,
    tokenizer: str | None = None,
    prompts: Prompts = DEFAULT_PROMPTS,
    planner_summary: bool = True,
    summary_query: SummaryQuery = "whole",
) -> Episode:
    """One MATPO rollout; ``final_answer`` is the planner's last ``\\boxed{}`` (its reply text if it boxed nothing);
    ``prompts``: ``paper`` (the authors' verbatim prompts) or ``compact`` (ours, for tiny offline models).
    ``planner_summary``: a planner at ``max_turns`` is asked for the authors' main-agent summary and answers from
    it (the default: every run ends with an answer to score); False ends the run there unanswered, as the authors'
    released training and evaluation scripts do (``disable_final_summary_for_main_agent=True``: the main agent
    summarises only when its context runs out, which this loop does not measure). ``summary_query``: what the
    worker summary request recaps (``SummaryQuery``)."""
    if summary_query == "released" and (prompts != "paper" or not recap):
        raise ValueError(
            f"summary_query=released re-reads the paper prompts' recap: set prompts=paper and recap=true "
            f"(got prompts={prompts}, recap={recap})"
        )
    if worker_context_tokens is not None and worker_context_tokens <= summary_reserve:
        raise ValueError(
            f"worker_context_tokens={worker_context_tokens} must exceed summary_reserve={summary_reserve}"
        )
    chosen = prompt_set("matpo", prompts)
    settings = WorkerSettings(
        worker_max_turns, summary, recap, worker_context_tokens, summary_reserve, chosen, summary_query
    )
    meter = token_meter(chat, tokenizer, role=WORKER)
    recorder = EpisodeRecorder("matpo", question, chat, toolbox)
    messages: list[Message] = chosen.messages(PLANNER, {"question": question})
    main_query = messages[-1]["content"]
    parent: int | None = None
    subtasks = 0
    for turn in range(max_turns):
        call = await recorder.ask(PLANNER, messages, parent=parent, turn=turn)
        parent = call.id
        messages = [*messages, {"role": "assistant", "content": call.reply.text}]
        use = parse_tool_use(call.reply.text)
        if use is None:
            answer = strip_thinking(call.reply.text)
            recorder.episode.final_answer = last_boxed(answer) or answer
            MatpoOutcome("answer", subtasks).record(recorder.episode.meta)
            return recorder.episode
        if use.error is None and use.tool == PLANNER_TOOL and isinstance(use.arguments.get("subtask"), str):
            subtasks += 1
            subtask = use.arguments["subtask"]
            response = await _worker(recorder, call, main_query, subtask, subtasks, settings, meter)
        else:
            response = f"Tool error: {use.error or f'the only tool is {PLANNER_TOOL} with a string argument subtask'}"
        messages = [*messages, _tool_response(chosen, response)]
    if not planner_summary:
        MatpoOutcome("turn_limit", subtasks).record(recorder.episode.meta)
        return recorder.episode
    final_prompt = planner_summary_prompt(chosen, main_query, failed=True)
    call = await recorder.ask(
        PLANNER,
        [*messages, _user(final_prompt)],
        parent=parent,
        turn=max_turns,
        meta=PlannerOutcome(forced=True).data(),
    )
    answer = _TOOL_USE.sub("", strip_thinking(call.reply.text)).strip()
    recorder.episode.final_answer = last_boxed(answer) or answer
    MatpoOutcome("turn_limit", subtasks).record(recorder.episode.meta)
    return recorder.episode
