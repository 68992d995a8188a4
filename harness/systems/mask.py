"""M-ASK (arXiv:2601.04703): search-behaviour agents (plan, search, answer) and knowledge-management agents (summary,
update) over a structured knowledge state {question, thinking_trajectory [(sub-question, sub-answer)],
predicted_answer} (§3, appendix C, algorithm 1).

plan → loop ≤ ``max_iterations``: search emits ``<search>q</search>`` or ``<end>`` → retrieve → summary extracts
``<evidence>`` → update edits the trajectory with ``<Update>ti</Update>`` (replace step i) or ``<Add>t(n+1)</Add>``
(append) → (answer, when ``answer_every_turn``) ... → answer. With ``answer_every_turn`` (what training needs) every
turn's prediction is in ``episode.intermediate_answers``; the Plan agent's prediction is always recorded as turn 0.
Ablation ``kma=False`` drops the summary and update agents: each query and its raw documents are appended to the
trajectory (table 3, "w/o KMA"). An update operation that names no existing step is applied as an Add and marked
``"invalid"`` in the call's meta; a search reply with neither tag ends the loop, marked ``"invalid"``. Every
call's meta says whether its reply is in the strict format of M-ASK's released code (``FormatCheck``; the checks:
``harness.systems.mask_format``), which its training code penalises.

``plan_reset`` (off by default) does what the released training loop does after the Plan agent
(``RayPPOTrainer.async_rollout_single`` in ``verl/trainer/ppo/ray_trainer.py`` lines 1319-1326,
chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b): the plan's sub-question/sub-answer pairs are cleared and
the trajectory restarts as the one step (question, the plan's answer); the plan's answer stays the predicted answer
and the plan call is trained as before. Off, the plan's trajectory T_0 goes into the loop, as §3.2 and algorithm 1
describe.

``prompts="code"`` (the default) uses the prompts of M-ASK's released code, the code that produced the paper's
numbers (``harness/prompts/mask/code/``): the ``<final_answer>`` tag, its few-shot answer examples, its trajectory
and search history layout, and the update agent is given the current predicted answer. ``prompts="appendix"`` uses the
paper's appendix C wording instead (``<predicted_answer>``, no answer for the update agent). ``prompts="compact"``
is ours, NOT the paper's (``mask/compact/``), for tiny offline models: one short user message per role, no
system message and no answer examples, the same tags the parsers read, and what the role copies placed last (the
question for plan and search, the documents for summary, the new evidence for update, the trajectory for answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.prompts.sets import PromptSet, prompt_choice, prompt_set
from harness.systems.mask_format import legal_format
from harness.systems.options import NonNegative
from harness.systems.outcomes import (
    FormatCheck,
    IntermediateAnswer,
    MaskOutcome,
    PlanOutcome,
    SearchOutcome,
    UpdateOutcome,
)
from harness.systems.parsing import last_tag, strip_thinking
from harness.systems.types import Chat, Episode, EpisodeRecorder, ModelCall, Toolbox
from harness.tools.output import ToolText

PLAN, SEARCH, SUMMARY, UPDATE, ANSWER = "plan", "search", "summary", "update", "answer"
ROLES = (PLAN, SEARCH, SUMMARY, UPDATE, ANSWER)
TOOLS = ("retrieve",)
EXAMPLE_SLOT = "[EXAMPLE_PROMPT]"

_PLAN_STEP = re.compile(r"<q(\d+)>(.*?)</q\1>\s*<a\1>(.*?)</a\1>", re.DOTALL)
_UPDATE = re.compile(r"<Update>\s*(?:t|τ|τ_)?\s*(\d+)\s*</Update>", re.IGNORECASE)
_ADD = re.compile(r"<Add>.*?</Add>", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Layout:
    """How one prompt set lays out what its prompts are filled with: the answer tag, the trajectory and history."""

    answer_tag: str
    step: str
    no_steps: str
    search: str
    no_searches: str
    update_sees_answer: bool

    def trajectory_text(self, trajectory: list[tuple[str, str]]) -> str:
        lines = [self.step.format(i=i, q=q, a=a) for i, (q, a) in enumerate(trajectory, 1)]
        return "\n".join(lines) or self.no_steps

    def history_text(self, history: list[tuple[str, str]]) -> str:
        lines = [self.search.format(i=i, q=q, s=s) for i, (q, s) in enumerate(history, 1)]
        return "\n".join(lines) or self.no_searches


DEFAULT_PROMPTS = "code"
Prompts = prompt_choice("mask", DEFAULT_PROMPTS)
"""The prompt sets (``harness/prompts/mask/``): ``code`` (the default), ``appendix`` and ``compact`` (ours)."""
LAYOUTS = {
    "code": Layout(
        answer_tag="final_answer",
        step="t{i}: Q: {q} | A: {a}",
        no_steps="",
        search="{i}. Query: {q} | Summary: {s}",
        no_searches="(No previous searches)",
        update_sees_answer=True,
    ),
    "appendix": Layout(
        answer_tag="predicted_answer",
        step="t{i}: sub-question: {q} | sub-answer: {a}",
        no_steps="(empty)",
        search="{q} -> {s}",
        no_searches="(none)",
        update_sees_answer=False,
    ),
    "compact": Layout(
        answer_tag="final_answer",
        step="t{i}: {q} -> {a}",
        no_steps="(empty)",
        search="{q} -> {s}",
        no_searches="(none)",
        update_sees_answer=False,
    ),
}
"""Each prompt set's layout, by set name."""
EXAMPLES = "examples"
"""The piece of a set that fills ``[EXAMPLE_PROMPT]``: its answer-style examples (the compact set has none)."""


@dataclass
class KnowledgeState:
    """The structured knowledge state K_t (Eq. 1)."""

    question: str
    trajectory: list[tuple[str, str]] = field(default_factory=list)
    predicted_answer: str = ""


def parse_plan(text: str, answer_tag: str = "final_answer") -> tuple[list[tuple[str, str]], str]:
    """The Plan agent's ``<qi>/<ai>`` pairs and its answer (``<final_answer>``, or the appendix's tag)."""
    reply = strip_thinking(text)
    steps = [(q.strip(), a.strip()) for _, q, a in _PLAN_STEP.findall(reply)]
    return steps, last_tag(reply, answer_tag) or ""


def parse_update(text: str, steps: int) -> tuple[str, int | None]:
    """``("update", i)`` (0-based) for a valid ``<Update>ti</Update>``, ``("add", None)`` for ``<Add>``, else
    ``("invalid", None)``."""
    reply = strip_thinking(text)
    update = _UPDATE.search(reply)
    if update and 1 <= int(update.group(1)) <= steps:
        return "update", int(update.group(1)) - 1
    if _ADD.search(reply) and not update:
        return "add", None
    return "invalid", None


def docs_text(output: str) -> str:
    """Retrieved documents as M-ASK's code hands them to its summary agent: one ``Doc<i>: <passage>`` line per
    passage (the corpus ``contents`` verbatim), joined by newlines (``SummaryAgent._build_messages``). Output with
    no separate documents (a tool error) is passed on as it is."""
    if not isinstance(output, ToolText):
        return output
    documents = output.contents or output.documents
    return "\n".join(f"Doc{number}: {document}" for number, document in enumerate(documents, start=1))


def _messages(prompts: PromptSet, role: str, values: dict[str, str], example: str) -> list[dict[str, str]]:
    messages = prompts.messages(role, values)
    if messages[0]["role"] == "system" and EXAMPLE_SLOT in messages[0]["content"]:
        messages[0]["content"] = messages[0]["content"].replace(EXAMPLE_SLOT, example)
    return messages


class _Agents:
    """The five role prompts bound to one recorder, prompt version and knowledge state."""

    def __init__(self, recorder: EpisodeRecorder, state: KnowledgeState, prompts: PromptSet, example: str):
        self.recorder, self.state, self.prompts, self.example = recorder, state, prompts, example
        self.layout = LAYOUTS[prompts.name]
        self.history: list[tuple[str, str]] = []

    def trajectory_text(self) -> str:
        return self.layout.trajectory_text(self.state.trajectory)

    async def ask(self, role: str, values: dict[str, str], parent: int | None, turn: int) -> ModelCall:
        messages = _messages(self.prompts, role, values, self.example)
        call = await self.recorder.ask(role, messages, parent=parent, turn=turn)
        steps = len(self.state.trajectory)  # what the Update agent sees, before its operation applies
        legal = legal_format(role, call.reply.text, answer_tag=self.layout.answer_tag, steps=steps)
        FormatCheck(legal).record(call.meta)
        return call

    async def plan(self) -> ModelCall:
        call = await self.ask(PLAN, {"query": self.state.question}, None, 0)
        self.state.trajectory, self.state.predicted_answer = parse_plan(
            call.reply.text, self.layout.answer_tag
        )
        PlanOutcome(len(self.state.trajectory)).record(call.meta)
        return call

    async def search(self, parent: int, turn: int) -> tuple[ModelCall, str | None]:
        values = {
            "question": self.state.question,
            "trajectory_text": self.trajectory_text(),
            "history_text": self.layout.history_text(self.history),
        }
        call = await self.ask(SEARCH, values, parent, turn)
        reply = strip_thinking(call.reply.text)
        query = last_tag(reply, "search")
        SearchOutcome("search" if query else ("end" if "<end>" in reply else "invalid")).record(call.meta)
        return call, query or None

    async def summarise(self, query: str, documents: str, parent: int, turn: int) -> tuple[ModelCall, str]:
        call = await self.ask(SUMMARY, {"query": query, "docs_text": documents}, parent, turn)
        reply = strip_thinking(call.reply.text)
        return call, last_tag(reply, "evidence") or reply

    async def update(self, query: str, evidence: str, parent: int, turn: int) -> ModelCall:
        values = {
            "orig_question": self.state.question,
            "trajectory_text": self.trajectory_text(),
            "new_query": query,
            "new_evidence": evidence,
        }
        if self.layout.update_sees_answer:
            values["predicted_answer"] = self.state.predicted_answer
        call = await self.ask(UPDATE, values, parent, turn)
        operation, index = parse_update(call.reply.text, len(self.state.trajectory))
        UpdateOutcome(operation, None if index is None else index + 1).record(call.meta)
        if index is None:
            self.state.trajectory.append((query, evidence))
        else:
            self.state.trajectory[index] = (query, evidence)
        return call

    async def answer(self, parent: int, turn: int) -> ModelCall:
        call = await self.ask(
            ANSWER,
            {"question": self.state.question, "trajectory_text": self.trajectory_text()},
            parent,
            turn,
        )
        reply = strip_thinking(call.reply.text)
        self.state.predicted_answer = last_tag(reply, self.layout.answer_tag) or reply
        return call


async def run(
    question: str,
    chat: Chat,
    toolbox: Toolbox,
    *,
    max_iterations: NonNegative = 5,
    answer_every_turn: bool = False,
    kma: bool = True,
    answer_style: str | None = None,
    prompts: Prompts = DEFAULT_PROMPTS,
    plan_reset: bool = False,
) -> Episode:
    """One M-ASK run; ``final_answer`` is the Answer agent's last answer tag (``<final_answer>`` by default).

    ``prompts``: "code" (M-ASK's released code, default), "appendix" (the paper's appendix wording) or "compact"
    (ours, for tiny offline models); ``answer_style`` replaces the answer-style examples (``[EXAMPLE_PROMPT]``) of
    the sets that have them. ``plan_reset`` (M-ASK's released training code): the Plan agent's sub-questions are
    dropped once it has answered, and the loop starts from the one step (question, the plan's answer).
    """
    chosen = prompt_set("mask", prompts)
    if answer_style is not None and EXAMPLES not in chosen.pieces:
        raise ValueError(
            f"mask: answer_style fills the answer examples, which prompts {prompts!r} has none of; "
            "drop answer_style or use prompts code or appendix"
        )
    recorder = EpisodeRecorder("mask", question, chat, toolbox)
    episode = recorder.episode
    state = KnowledgeState(question)
    if answer_style is not None:
        example = answer_style
    else:
        example = chosen.piece(EXAMPLES) if EXAMPLES in chosen.pieces else ""
    agents = _Agents(recorder, state, chosen, example)
    latest = await agents.plan()
    if plan_reset:
        state.trajectory = [(question, state.predicted_answer)]
    episode.intermediate_answers.append(IntermediateAnswer(0, state.predicted_answer, latest.id, PLAN).data())
    answered, completed, stopped = False, 0, "iteration_limit"
    for turn in range(1, max_iterations + 1):
        search, query = await agents.search(latest.id, turn)
        if query is None:
            stopped = SearchOutcome.of(search.meta).action
            break
        retrieved = await recorder.tool("retrieve", call=search.id, turn=turn, query=query)
        documents = retrieved.output if retrieved.error is None else f"Tool error: {retrieved.error}"
        if kma:
            summary, evidence = await agents.summarise(query, docs_text(documents), search.id, turn)
            agents.history.append((query, evidence))
            latest = await agents.update(query, evidence, summary.id, turn)
        else:
            agents.history.append((query, documents))
            state.trajectory.append((query, documents))
            latest = search
        completed, answered = turn, answer_every_turn
        if answer_every_turn:
            latest = await agents.answer(latest.id, turn)
            episode.intermediate_answers.append(
                IntermediateAnswer(turn, state.predicted_answer, latest.id, ANSWER).data()
            )
    if not answered:
        await agents.answer(latest.id, completed)
    episode.final_answer = state.predicted_answer
    MaskOutcome(stopped, kma, [list(step) for step in state.trajectory], prompts).record(episode.meta)
    return episode
