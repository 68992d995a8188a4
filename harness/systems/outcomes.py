"""The typed outcomes: the contract between a system and what reads its episodes (the trainer's methods, the
harness's stored logs).

Each system writes its outcome fields through one of these classes, and every reader reads them back through the
same class -- never by string key. The fields are stored as plain data in ``meta`` (``ModelCall.meta`` per call,
``Episode.meta`` per episode; ``mara_bench.core.episodes``), since Episodes are serialised.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, Literal, Self


class Outcome:
    """Base of the typed outcomes: ``record(meta)`` writes the fields into a ``meta`` dict, ``of(meta)`` reads them
    back (a field with a default may be absent; a required one missing raises a ``KeyError`` naming the class)."""

    def data(self) -> dict[str, Any]:
        """The fields as plain data (what ``meta`` stores)."""
        return asdict(self)  # type: ignore[call-overload]

    def record(self, meta: dict[str, Any]) -> None:
        """Write the fields into ``meta``."""
        meta.update(self.data())

    @classmethod
    def required(cls) -> list[str]:
        """The fields without a default: a ``meta`` holding them all is a record of this outcome."""
        return [
            f.name
            for f in fields(cls)  # type: ignore[arg-type]
            if f.default is MISSING and f.default_factory is MISSING
        ]

    @classmethod
    def recorded(cls, meta: dict[str, Any]) -> bool:
        """Whether ``meta`` holds a record of this outcome."""
        return all(name in meta for name in cls.required())

    @classmethod
    def of(cls, meta: dict[str, Any]) -> Self:
        """The outcome recorded in ``meta`` (``KeyError`` when a required field is missing)."""
        missing = [name for name in cls.required() if name not in meta]
        if missing:
            raise KeyError(f"meta has no {', '.join(missing)}: it is not a {cls.__name__} record")
        return cls(**{f.name: meta[f.name] for f in fields(cls) if f.name in meta})  # type: ignore[arg-type]


@dataclass(frozen=True)
class SolverOutcome(Outcome):
    """A V-C Solver call (``mara_bench.harness.systems.vc``)."""

    attempt: int = 0
    """Which try this is (a truncated Solver reply is retried up to ``solver_attempts`` times)."""


@dataclass(frozen=True)
class VerifierOutcome(Outcome):
    """A V-C Verifier call: what it concluded about the solution it judged (read by MarsRL's rewards)."""

    verdict: bool | None
    """``True`` for Correct, ``False`` for Wrong, ``None`` when the report was truncated or had no verdict."""
    truncated: bool
    """The report hit the token limit."""
    candidate: int
    """The id of the Solver or Corrector call whose solution was judged."""


@dataclass
class VCOutcome(Outcome):
    """A V-C episode's ending."""

    outcome: str
    """``accepted``, ``iteration_limit``, ``corrector_truncated`` or ``solver_truncated``."""
    iterations: int
    """Verify/correct iterations after the first verification."""
    chosen_call: int | None = None
    """The call whose solution is the final answer (accepted, or verified most often)."""
    candidates: list[dict[str, int]] = field(default_factory=list)
    """Each candidate solution's ``{"call": id, "passes": verifications passed}``."""


@dataclass(frozen=True)
class DistillOutcome(Outcome):
    """A MARS System-1 call: one bin of packed tool outputs distilled for System 2."""

    request: int
    """Which of System 2's tool requests (in its turn) the bin's outputs answer."""
    pages: list[int]
    """Indices of that request's outputs packed into this bin."""
    truncated: bool
    """The bin holds one output cut to System 1's budget."""
    full_pages: int = 0
    """How many of the bin's outputs are pages read in full (the rest are snippets or other tool text)."""


@dataclass(frozen=True)
class MarsSetup(Outcome):
    """How a MARS episode ran System 1 (its ending is a ``ToolLoopOutcome``)."""

    sys1: bool
    """Whether System 1 distilled the tool outputs (``False``: the "without System 1" ablation)."""
    token_counting: str
    """How bins were measured (the policy's tokenizer, a named one, or the character estimate)."""
    sys1_budget: int
    """System 1's token budget per bin."""
    reading: str = "snippets"
    """``pages`` when search/scholar results were read in full with ``browse``, else ``snippets``."""


@dataclass(frozen=True)
class WorkerOutcome(Outcome):
    """A MATPO worker call (read by MATPO's format reward)."""

    subtask: int
    """Which of the planner's ``search_and_browse`` sub-tasks this worker rollout serves."""
    summary: bool = False
    """The worker's final summary call (no tool call is expected in it)."""
    finished: bool | None = None
    """On the summary call: whether the worker ended on its own before its turn limit."""
    trimmed: bool | None = None
    """On the summary call: whether the latest messages were removed so that the summary fits the context."""


@dataclass(frozen=True)
class PlannerOutcome(Outcome):
    """A MATPO planner call made by the system rather than the loop."""

    forced: bool
    """The final answer asked for at the turn limit with the authors' main-agent summary prompt."""


@dataclass
class ToolLoopOutcome(Outcome):
    """How a tool-calling loop (``react``, ``mars``, ``matpo``'s planner) ended."""

    stopped: str
    """``answer`` (an answer was given) or ``turn_limit``."""


@dataclass
class MatpoOutcome(ToolLoopOutcome):
    """A MATPO episode's ending."""

    subtasks: int = 0
    """How many worker rollouts the planner started."""


@dataclass(frozen=True)
class PlanOutcome(Outcome):
    """An M-ASK Plan call."""

    steps: int
    """Sub-questions in the plan's initial thinking trajectory."""


@dataclass(frozen=True)
class SearchOutcome(Outcome):
    """An M-ASK Search call (read by M-ASK's rewards: a call that ends the loop earns 0)."""

    action: Literal["search", "end", "invalid"]
    """``search`` (a sub-query, the released fallback's included), ``end`` (``<end>``, or no fallback query) or
    ``invalid`` (an empty ``<search></search>``: ends the loop too; ``mara_bench.harness.systems.mask_parse``)."""


@dataclass(frozen=True)
class UpdateOutcome(Outcome):
    """An M-ASK Update call."""

    operation: str
    """``update``, ``add`` or ``invalid`` (a reply outside the released strict format; applied as an add)."""
    step: int | None
    """The number of the trajectory step replaced (its key ``t<number>``); ``None`` for an add."""


@dataclass(frozen=True)
class FormatCheck(Outcome):
    """An M-ASK call's format (read by M-ASK's format penalty, ``algorithm.mask.format_penalty``)."""

    legal_format: bool
    """Whether the reply is in the released code's strict format for its role (``mara_bench.harness.systems.mask_format``)."""


@dataclass
class MaskOutcome(Outcome):
    """An M-ASK episode's ending."""

    stopped: str
    """``iteration_limit``, ``end`` or ``invalid`` (the Search call's action that ended the loop)."""
    kma: bool
    """Whether the knowledge-management agents (summary, update) ran."""
    trajectory: list[list[str]]
    """The final thinking trajectory, ``[sub-question, sub-answer]`` per step."""
    prompts: str
    """Which prompt set the agents used (``-T prompts=``): ``code`` (M-ASK's released code), ``appendix`` (the
    paper's appendix) or ``compact`` (ours)."""


@dataclass(frozen=True)
class IntermediateAnswer(Outcome):
    """One entry of ``Episode.intermediate_answers`` (read by M-ASK's turn-level rewards)."""

    turn: int
    """The turn it answers after (0: the Plan agent's prediction)."""
    answer: str | None
    """The predicted answer at that turn."""
    call: int
    """The id of the call that made the prediction."""
    role: str
    """The role of that call (``plan`` or ``answer``)."""
