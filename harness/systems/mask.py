"""M-ASK (arXiv:2601.04703): search-behaviour agents (plan, search, answer) and knowledge-management agents (summary,
update) over a structured knowledge state {question, thinking_trajectory [(sub-question, sub-answer)],
predicted_answer} (§3, appendix C, algorithm 1).

plan → loop ≤ ``max_iterations``: search emits ``<search>q</search>`` or ``<end>`` → retrieve → summary extracts
``<evidence>`` → update edits the trajectory with ``<Update>ti</Update>`` (replace step i) or ``<Add>t(n+1)</Add>``
(append) → (answer, when ``answer_every_turn``) ... → answer. With ``answer_every_turn`` (what training needs) every
turn's prediction is in ``episode.intermediate_answers``; the Plan agent's prediction is always recorded as turn 0.
Ablation ``kma=False`` drops the summary and update agents: each query and its raw documents are appended to the
trajectory (table 3, "w/o KMA"). Every agent's reply is read as M-ASK's released ``parse_response`` reads it
(``mara_bench.harness.systems.mask_parse``): an update reply outside the strict format is applied as an Add and marked
``"invalid"`` in the call's meta; a search reply with neither tag searches for a query cut from its first line.
Three released behaviours are switches, off by default: ``empty_query="released"`` searches an empty
``<search></search>`` (else it ends the loop, ``"invalid"``), ``answer_inference="released"`` lets an Answer reply
without an answer take the released "largest number" guess, and ``step_numbers="released"`` keeps the plan's own
step numbers (``t1``, ``t3``) where ours renumbers 1..n. Every call's meta says whether its reply
is in the strict format of M-ASK's released code (``FormatCheck``; the checks: ``mara_bench.harness.systems.mask_format``),
which its training code penalises.

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

from dataclasses import dataclass, field

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, ModelCall, Toolbox
from mara_bench.harness.prompts.sets import PromptSet, prompt_choice, prompt_set
from mara_bench.harness.systems.mask_format import legal_format
from mara_bench.harness.systems.mask_parse import (
    AnswerInference,
    EmptyQuery,
    StepNumbers,
    evidence,
    final_answer,
    plan_values,
    search_action,
    update_operation,
)
from mara_bench.harness.systems.options import NonNegative
from mara_bench.harness.systems.outcomes import (
    FormatCheck,
    IntermediateAnswer,
    MaskOutcome,
    PlanOutcome,
    SearchOutcome,
    UpdateOutcome,
)
from mara_bench.harness.toolbase.output import ToolText

PLAN, SEARCH, SUMMARY, UPDATE, ANSWER = "plan", "search", "summary", "update", "answer"
ROLES = (PLAN, SEARCH, SUMMARY, UPDATE, ANSWER)
TOOLS = ("retrieve",)
EXAMPLE_SLOT = "[EXAMPLE_PROMPT]"


@dataclass(frozen=True)
class Layout:
    """How one prompt set lays out what its prompts are filled with: the answer tag, the trajectory and history."""

    answer_tag: str
    step: str
    no_steps: str
    search: str
    no_searches: str
    update_sees_answer: bool

    def trajectory_text(self, trajectory: list[tuple[str, str]], numbers: list[int]) -> str:
        lines = [self.step.format(i=i, q=q, a=a) for i, (q, a) in zip(numbers, trajectory, strict=True)]
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
    numbers: list[int] = field(default_factory=list)
    """Each step's number, its key ``t<number>`` in the prompts: 1..n unless ``step_numbers="released"``."""

    def restart(self, steps: list[tuple[str, str]], numbers: list[int] | None = None) -> None:
        """The trajectory set to ``steps``, numbered ``numbers`` (default 1..n)."""
        self.trajectory, self.numbers = list(steps), numbers or list(range(1, len(steps) + 1))

    def replace(self, number: int, step: tuple[str, str]) -> None:
        self.trajectory[self.numbers.index(number)] = step

    def add(self, step: tuple[str, str]) -> None:
        """Step n + 1 (n the number of steps), replacing a step of that number if there is one (the released
        trajectory's keys, ``step_numbers="released"``), else appended."""
        number = len(self.trajectory) + 1
        if number in self.numbers:
            self.replace(number, step)
        else:
            self.trajectory.append(step)
            self.numbers.append(number)


def docs_text(output: str) -> str:
    """Retrieved documents as M-ASK's code hands them to its summary agent: one ``Doc<i>: <passage>`` line per
    passage (the corpus ``contents`` verbatim), joined by newlines (``SummaryAgent._build_messages``). Output with
    no separate documents (a tool error) is passed on as it is."""
    if not isinstance(output, ToolText):
        return output
    return "\n".join(f"Doc{number}: {document}" for number, document in enumerate(passages(output), start=1))


def passages(output: str) -> list[str]:
    """The retrieved passages of a ``retrieve`` output (the corpus ``contents``); none for a tool error."""
    return (output.contents or output.documents) if isinstance(output, ToolText) else []


def _messages(prompts: PromptSet, role: str, values: dict[str, str], example: str) -> list[dict[str, str]]:
    messages = prompts.messages(role, values)
    if messages[0]["role"] == "system" and EXAMPLE_SLOT in messages[0]["content"]:
        messages[0]["content"] = messages[0]["content"].replace(EXAMPLE_SLOT, example)
    return messages


@dataclass(frozen=True)
class ReleasedReading:
    """The switches for the released parsers' behaviours we do not keep (``mask_parse.EmptyQuery``,
    ``AnswerInference``, ``StepNumbers``)."""

    empty_query: EmptyQuery = "end"
    answer_inference: AnswerInference = "skip"
    step_numbers: StepNumbers = "renumbered"


class _Agents:
    """The five role prompts bound to one recorder, prompt version and knowledge state."""

    def __init__(
        self,
        recorder: EpisodeRecorder,
        state: KnowledgeState,
        prompts: PromptSet,
        example: str,
        read: ReleasedReading,
    ):
        self.recorder, self.state, self.prompts, self.example, self.read = (
            recorder,
            state,
            prompts,
            example,
            read,
        )
        self.layout = LAYOUTS[prompts.name]
        self.history: list[tuple[str, str]] = []

    def trajectory_text(self) -> str:
        return self.layout.trajectory_text(self.state.trajectory, self.state.numbers)

    async def ask(self, role: str, values: dict[str, str], parent: int | None, turn: int) -> ModelCall:
        messages = _messages(self.prompts, role, values, self.example)
        call = await self.recorder.ask(role, messages, parent=parent, turn=turn)
        steps = list(self.state.numbers)  # what the Update agent sees, before its operation applies
        legal = legal_format(role, call.reply.text, answer_tag=self.layout.answer_tag, steps=steps)
        FormatCheck(legal).record(call.meta)
        return call

    async def plan(self) -> ModelCall:
        call = await self.ask(PLAN, {"query": self.state.question}, None, 0)
        reading = plan_values(call.reply.text, self.state.question, self.layout.answer_tag)
        self.state.restart(reading.steps, reading.numbers if self.read.step_numbers == "released" else None)
        self.state.predicted_answer = reading.answer
        PlanOutcome(len(self.state.trajectory)).record(call.meta)
        return call

    async def search(self, parent: int, turn: int) -> tuple[ModelCall, str | None]:
        values = {
            "question": self.state.question,
            "trajectory_text": self.trajectory_text(),
            "history_text": self.layout.history_text(self.history),
        }
        call = await self.ask(SEARCH, values, parent, turn)
        action = search_action(call.reply.text, self.read.empty_query)
        SearchOutcome(action.action).record(call.meta)
        return call, action.query

    async def summarise(self, query: str, documents: str, parent: int, turn: int) -> tuple[ModelCall, str]:
        call = await self.ask(SUMMARY, {"query": query, "docs_text": docs_text(documents)}, parent, turn)
        return call, evidence(call.reply.text, query, passages(documents))

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
        operation, number = update_operation(call.reply.text, self.state.numbers)
        UpdateOutcome(operation, number).record(call.meta)
        if number is None:
            self.state.add((query, evidence))
        else:
            self.state.replace(number, (query, evidence))
        return call

    async def answer(self, parent: int, turn: int) -> ModelCall:
        call = await self.ask(
            ANSWER,
            {"question": self.state.question, "trajectory_text": self.trajectory_text()},
            parent,
            turn,
        )
        self.state.predicted_answer = final_answer(
            call.reply.text, self.state.trajectory, self.layout.answer_tag, self.read.answer_inference
        )
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
    empty_query: EmptyQuery = "end",
    answer_inference: AnswerInference = "skip",
    step_numbers: StepNumbers = "renumbered",
) -> Episode:
    """One M-ASK run; ``final_answer`` is the Answer agent's last answer tag (``<final_answer>`` by default).

    ``prompts``: "code" (M-ASK's released code, default), "appendix" (the paper's appendix wording) or "compact"
    (ours, for tiny offline models); ``answer_style`` replaces the answer-style examples (``[EXAMPLE_PROMPT]``) of
    the sets that have them. ``plan_reset`` (M-ASK's released training code): the Plan agent's sub-questions are
    dropped once it has answered, and the loop starts from the one step (question, the plan's answer).
    ``empty_query``, ``answer_inference`` and ``step_numbers``: the released parsers' behaviours we do not keep,
    off by default (module docstring).
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
    agents = _Agents(
        recorder, state, chosen, example, ReleasedReading(empty_query, answer_inference, step_numbers)
    )
    latest = await agents.plan()
    if plan_reset:
        state.restart([(question, state.predicted_answer)])
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
            summary, found = await agents.summarise(query, documents, search.id, turn)
            agents.history.append((query, found))
            latest = await agents.update(query, found, summary.id, turn)
        else:
            agents.history.append((query, documents))
            state.add((query, documents))
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
