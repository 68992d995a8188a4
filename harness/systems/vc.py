"""The V-C reasoning system of MarsRL (arXiv:2511.11373 §2.1, §3.1; public code liushulinle/MarsRL): Solver → Verifier →
Corrector → Verifier → ... until a candidate passes ``accept_after`` consecutive verifications.

Faithful to the public inference code: only the text after ``</think>`` is handed on; the Solver gets the bare problem
(no system prompt) and is retried when truncated; the Corrector continues the Solver's conversation with the bug
report; a truncated Corrector ends the loop; at most ``max_iterations`` verify(/correct) iterations follow the first
verification. Three deliberate differences from the released code:

1. the verdict is parsed strictly (``parse_verdict``): only "Correct" and its listed synonyms pass
   (``PASSING_VERDICTS``), read from the labelled Correctness line, where the released code passes any verdict
   containing "correct" ("Incorrect", "Partially correct");
2. when nothing is accepted the final answer is the candidate the Verifier passed most often (the paper's rule; the
   latest such candidate on ties, the latest candidate if none ever passed) instead of nothing;
3. the Corrector receives the Verifier's findings (the report up to its Correctness field, as the paper describes),
   where the released code cuts at the literal ``**Correctness**`` that its own format never writes and so mostly
   sends an empty bug report; ``bug_report="released"`` (``-T bug_report=released``) reproduces the released cut.

The Verifier's prompt is the paper's verbatim one by default (``prompts="paper"``); ``"compact"`` is a short prompt
of ours for tiny offline models (``harness/prompts/vc/compact/``), same output format, the judged solution last.

One public function per agent step (``ask_solver``, ``ask_verifier``, ``ask_corrector``) builds that agent's prompt
and records its call; ``run`` chains them, and MarsRL's grouped training rollouts
(``mara_bench.trainer.methods.marsrl_rollout``) branch over the same steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, Message, ModelCall, Toolbox
from mara_bench.harness.prompts.sets import prompt_choice, prompt_set
from mara_bench.harness.systems.options import AtLeastOne, NonNegative
from mara_bench.harness.systems.outcomes import SolverOutcome, VCOutcome, VerifierOutcome
from mara_bench.harness.systems.parsing import strip_thinking

SOLVER = "solver"
VERIFIER = "verifier"
CORRECTOR = "corrector"
ROLES = (SOLVER, VERIFIER, CORRECTOR)
SOLVER_ANSWER = "solver"
"""Name of the Solver's first answer in ``Episode.answers`` (stored as ``answer.solver``)."""

DEFAULT_PROMPTS = "paper"
Prompts = prompt_choice("vc", DEFAULT_PROMPTS)
"""The prompt sets (``harness/prompts/vc/``): ``paper``, MarsRL's verbatim Verifier system prompt and user message
(the default, for every evaluation); ``compact``, ours (NOT the paper's), one short Verifier user message with the
judged solution last, for tiny offline models that cannot use a number buried in the ~2.9k-token verbatim prompt.
Both share the Corrector's verbatim prompt (``vc/corrector.user.txt``); the Solver gets the bare problem."""

_VERDICT_FIELD = re.compile(r"\b(correctness)\b", re.IGNORECASE)
_LABELLED_FIELD = re.compile(r"^[ \t>#*_`-]*(correctness)[ \t*_`]*:", re.IGNORECASE | re.MULTILINE)
_FIELD_MARKUP = " \t\r\n*_`:"
_DASHES = re.compile(r"\s*(?:--|\u2014|\u2013)\s*")
PASSING_VERDICTS = frozenset(
    {"correct", "right", "true", "yes", "correct (with gaps)", "correct - no errors", "correctly solved"}
)
"""The verdicts that pass (lower case, a dash of any kind written ``-``): "Correct", and the synonyms Verifiers
write for it -- "Right", "True", "Yes", "Correct (with gaps)" (the prompt asks for "Correct" when no error is found,
so a Verifier that names only gaps, not errors, means Correct), "Correct -- no errors", "Correctly solved"."""
FAILING_VERDICTS = frozenset({"wrong", "incorrect", "not correct"})
"""The verdicts that fail."""
RELEASED_FIELD = "**Correctness**"
"""The literal the released code cuts a report at for its bug report (``extract_detailed_solution``)."""

BugReport = Literal["findings", "released"]
"""What the Corrector receives: ``findings``, the report up to its verdict field (``verdict_field``; ours, the
default, what the paper describes: the Verifier's findings); ``released``, the released code's cut, the text before the literal
``**Correctness**`` and nothing when the report lacks it (its own format writes ``**Correctness:** Wrong``, so the
released Corrector mostly receives an empty bug report)."""


def parse_verdict(report: str) -> bool | None:
    """``True`` for Correct, ``False`` for Wrong, ``None`` when unparsable (which never counts as a pass).

    The verdict is the value of the report's verdict field (``verdict_field``): its first line, markup and a closing
    full stop stripped. "Correct" and its listed synonyms pass (``PASSING_VERDICTS``); "Wrong", "Incorrect" and "Not
    correct" fail; anything else -- a hedge such as "Partially correct" or "Wrong, but the final answer is correct"
    -- is unparsable, so it never passes either.
    """
    field = verdict_field(report)
    if field is None:
        return None
    value = report[field.end() :].lstrip(_FIELD_MARKUP).split("\n", 1)[0]
    verdict = _DASHES.sub(" - ", " ".join(value.rstrip(_FIELD_MARKUP + ".!").lower().split()))
    if verdict in PASSING_VERDICTS:
        return True
    return False if verdict in FAILING_VERDICTS else None


def verdict_field(report: str) -> re.Match[str] | None:
    """Where the report's verdict field is: its last labelled line (a line opening with "Correctness" and a colon,
    markup allowed), so that a later prose line mentioning correctness does not replace it; without such a line,
    its last mention of "Correctness" (the whole word, so "incorrectness" in the findings is no field)."""
    labelled = list(_LABELLED_FIELD.finditer(report))
    mentions = labelled or list(_VERDICT_FIELD.finditer(report))
    return mentions[-1] if mentions else None


def bug_report(report: str, cut: BugReport = "findings") -> str:
    """The part of a verification report the Corrector sees (``BugReport``)."""
    if cut == "released":
        at = report.find(RELEASED_FIELD)
        return "" if at == -1 else report[:at].strip()
    field = verdict_field(report)
    return report[: field.start(1)].rstrip(" *\n") if field else report.strip()


def solution_text(call: ModelCall) -> str:
    """What a Solver/Corrector call hands on: its reply after ``</think>``."""
    return strip_thinking(call.reply.text)


async def ask_solver(recorder: EpisodeRecorder, attempt: int = 0) -> ModelCall:
    """One Solver call on the bare problem (no system prompt); ``attempt`` counts retries of a truncated one."""
    question = recorder.episode.question
    return await recorder.ask(
        SOLVER, [{"role": "user", "content": question}], meta=SolverOutcome(attempt).data()
    )


def verifier_messages(problem: str, solution: str, prompts: str = DEFAULT_PROMPTS) -> list[Message]:
    """The Verifier's messages judging ``solution`` (the text a Solver/Corrector handed on) to ``problem``."""
    return prompt_set("vc", prompts).messages(VERIFIER, {"problem": problem, "solution": solution})


async def ask_verifier(
    recorder: EpisodeRecorder, solution: ModelCall, turn: int, prompts: str = DEFAULT_PROMPTS
) -> ModelCall:
    """One Verifier call judging ``solution`` (a Solver or Corrector call) with the prompt set ``prompts``;
    records ``verdict`` (``None`` when truncated or unparsable), ``truncated`` and ``candidate`` (the judged call's
    id) in the call's meta."""
    messages = verifier_messages(recorder.episode.question, solution_text(solution), prompts)
    call = await recorder.ask(VERIFIER, messages, parent=solution.id, turn=turn)
    truncated = call.reply.finish_reason == "length"
    verdict = None if truncated else parse_verdict(strip_thinking(call.reply.text))
    VerifierOutcome(verdict, truncated, solution.id).record(call.meta)
    return call


async def ask_corrector(
    recorder: EpisodeRecorder,
    report: ModelCall,
    turn: int,
    cut: BugReport = "findings",
    prompts: str = DEFAULT_PROMPTS,
) -> ModelCall:
    """One Corrector call revising the solution ``report`` (a Verifier call) judged: it continues that solution's
    conversation (the problem, the solution as an assistant turn) with the report's bug report (``cut``)."""
    solution = recorder.episode.calls[VerifierOutcome.of(report.meta).candidate]
    findings = bug_report(strip_thinking(report.reply.text), cut)
    messages = [
        {"role": "user", "content": recorder.episode.question},
        {"role": "assistant", "content": solution_text(solution)},
        *prompt_set("vc", prompts).messages(CORRECTOR, {"bug_report": findings}),
    ]
    return await recorder.ask(CORRECTOR, messages, parent=report.id, turn=turn)


@dataclass
class _Candidate:
    """A solution (Solver's or Corrector's) and how often the Verifier passed it."""

    call: ModelCall
    text: str
    passes: int = 0


async def _solve(recorder: EpisodeRecorder, attempts: int) -> ModelCall | None:
    for attempt in range(attempts):
        call = await ask_solver(recorder, attempt)
        if call.reply.finish_reason != "length":
            return call
    return None


async def _verify(
    recorder: EpisodeRecorder, candidate: _Candidate, turn: int, prompts: str
) -> tuple[ModelCall, bool]:
    call = await ask_verifier(recorder, candidate.call, turn, prompts)
    passed = VerifierOutcome.of(call.meta).verdict is True
    candidate.passes += passed
    return call, passed


def _fallback(candidates: list[_Candidate]) -> _Candidate:
    return max(reversed(candidates), key=lambda c: c.passes)


async def run(
    question: str,
    chat: Chat,
    toolbox: Toolbox,  # noqa: ARG001 - the V-C system uses no tools
    *,
    accept_after: AtLeastOne = 4,
    max_iterations: NonNegative = 10,
    solver_attempts: AtLeastOne = 3,
    prompts: Prompts = DEFAULT_PROMPTS,
    bug_report: BugReport = "findings",
) -> Episode:
    """One V-C run; ``final_answer`` is the accepted (or fallback) solution, ``answers["solver"]`` the first one.

    The options' ranges are checked where the system is set up (``SystemSpec.setup``)."""
    recorder = EpisodeRecorder("vc", question, chat)
    episode = recorder.episode
    solved = await _solve(recorder, solver_attempts)
    if solved is None:
        episode.answers[SOLVER_ANSWER] = None
        VCOutcome("solver_truncated", 0).record(episode.meta)
        return episode
    candidate = _Candidate(solved, solution_text(solved))
    candidates = [candidate]
    episode.answers[SOLVER_ANSWER] = candidate.text
    report, passed = await _verify(recorder, candidate, 0, prompts)
    streak, outcome, iterations = int(passed), "iteration_limit", 0
    while streak < accept_after and iterations < max_iterations:
        iterations += 1
        if not passed:
            corrected = await ask_corrector(
                recorder, report, turn=iterations, cut=bug_report, prompts=prompts
            )
            if corrected.reply.finish_reason == "length":
                outcome = "corrector_truncated"
                break
            candidate = _Candidate(corrected, solution_text(corrected))
            candidates.append(candidate)
            streak = 0
        report, passed = await _verify(recorder, candidate, iterations, prompts)
        streak = streak + 1 if passed else 0
    accepted = streak >= accept_after
    chosen = candidate if accepted else _fallback(candidates)
    episode.final_answer = chosen.text
    VCOutcome(
        outcome="accepted" if accepted else outcome,
        iterations=iterations,
        chosen_call=chosen.call.id,
        candidates=[{"call": c.call.id, "passes": c.passes} for c in candidates],
    ).record(episode.meta)
    return episode
