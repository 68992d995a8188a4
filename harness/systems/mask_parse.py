"""The values M-ASK's agents read from their replies, as the released ``parse_response`` methods read them
(``PlanningAgent``, ``SearchAgent``, ``SummaryAgent``, ``UpdateAgent``, ``AnswerAgent`` in qa_manager/base_agent.py,
chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b), reimplemented from their rules; whether a reply is in
the strict format is ``mara_bench.harness.systems.mask_format``'s. Tags match in any case; of several blocks the first counts.

* plan: the ``<qN>``/``<aN>`` blocks paired by number, in number order (a missing sub-question is "", a missing
  sub-answer "unkown", the released spelling); without any, every line holding a colon is one step (the text before
  the first colon, the rest -- or "unkown"), and without those the one step (question, "unkown"). The answer: the
  first answer-tag block, else the reply's last non-empty line (when it is at most 500 characters); "unkown" when
  that is empty.
* search: the first ``<search>`` block's query, else ``<end>``, else a query cut from the reply's first line (its
  first 200 characters, every character but ASCII letters, digits, CJK ideographs and white space made a space),
  and the end when that is empty.
* summary: the first ``<evidence>`` block, else "No useful information" for an empty reply, else the same cut of the
  first line ("No useful information" when it mentions "no useful", "unknown", "none" or "unavailable"), else the
  retrieved passages' sentence sharing most words with the query, else "No useful information".
* update: a legal ``<Add>`` adds step n + 1 (n the number of steps) and a legal ``<Update>ti</Update>`` replaces
  step i; any reply outside the strict format is applied as an add (``invalid``).
* answer: the first answer-tag block, else the reply's first line; when that is empty, the first step's sub-answer.

Two released behaviours are plainly bugs and are switches, off by default (``EmptyQuery``, ``AnswerInference``): an
empty ``<search></search>`` searches for "" (here it ends the loop, ``invalid``); and an Answer reply with no answer
takes the sub-question whose sub-answer starts with the largest number, its "What is the population of " cut (a
leftover of the released code's own example), before the first step's sub-answer. A third difference is ours by
default (``StepNumbers``): the released trajectory's keys keep the plan's numbers (``q1``, ``q3`` → ``t1``, ``t3``;
the colon-line fallback numbers lines), so its Add of step n + 1 can overwrite an existing step (``t3`` after ``t1``,
``t3``); here the steps are numbered 1..n unless ``step_numbers="released"``.

The released code reads the raw reply of a model that does not think; these read the reply after any thinking
(``strip_thinking``), as the format checks do -- except the Answer agent's first-line fallback, which reads a reply
without thinking as it is (a reply opening with a line break has an empty first line, as in the released code) and
the text after ``</think>`` without its leading white space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from mara_bench.harness.systems.mask_format import update_legal
from mara_bench.harness.systems.parsing import THINK_END, strip_thinking

UNKNOWN = "unkown"
"""The released code's placeholder for a missing sub-answer or answer (its spelling)."""
NO_INFORMATION = "No useful information"
MAX_FALLBACK_ANSWER = 500
"""A plan's last-line answer longer than this is no answer (``PlanningAgent.parse_response``)."""
_FLAGS = re.DOTALL | re.IGNORECASE
_NOT_WORD = re.compile(r"[^a-zA-Z0-9\u4e00-\u9fa5\s]")
_NO_INFORMATION_WORDS = ("no useful", "unknown", "none", "unavailable")
_SENTENCE = re.compile(r"[。.!?]")
_POPULATION = re.compile(r"^What is the population of\s+", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"[\d\.]+")

EmptyQuery = Literal["end", "released"]
"""An empty ``<search></search>``: ``end``, the loop ends (``invalid``; the default); ``released``, it searches for ""."""
StepNumbers = Literal["renumbered", "released"]
"""The trajectory's step numbers: ``renumbered``, 1..n (the default); ``released``, the plan's own (module
docstring)."""
AnswerInference = Literal["skip", "released"]
"""An Answer reply with no answer: ``skip``, the first step's sub-answer (the default); ``released``, first the
released "largest number" guess (module docstring)."""


@dataclass(frozen=True)
class SearchAction:
    """What a Search reply asks for: ``search`` with ``query``, ``end``, or ``invalid`` (an empty query)."""

    action: Literal["search", "end", "invalid"]
    query: str | None = None


def _first(tag: str, text: str) -> str | None:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, _FLAGS)
    return match.group(1).strip() if match else None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n") if line.strip()]


def _first_line_words(text: str) -> str:
    """The released fallback cut: the first line's first 200 characters, non-word characters made spaces."""
    return " ".join(_NOT_WORD.sub(" ", text.strip().split("\n")[0][:200]).split())


@dataclass(frozen=True)
class PlanReading:
    """A Plan reply's steps (sub-question, sub-answer), each step's number (the released trajectory's key
    ``t<number>``: the tag's number, or the line's for the colon-line fallback) and its answer."""

    steps: list[tuple[str, str]]
    numbers: list[int]
    answer: str


def plan_values(reply: str, question: str, answer_tag: str) -> PlanReading:
    """The Plan agent's steps and answer (module docstring)."""
    text = strip_thinking(reply)
    if not text:
        return PlanReading([(question, UNKNOWN)], [1], UNKNOWN)
    questions = {int(n): q.strip() for n, q in re.findall(r"<q(\d+)>(.*?)</q\1>", text, _FLAGS)}
    answers = {int(n): a.strip() for n, a in re.findall(r"<a(\d+)>(.*?)</a\1>", text, _FLAGS)}
    if questions or answers:
        numbers = sorted(set(questions) | set(answers))
        steps = [(questions.get(n, ""), answers.get(n, UNKNOWN)) for n in numbers]
    else:
        split = {n: line.split(":", 1) for n, line in enumerate(_lines(text), start=1) if ":" in line}
        numbers = list(split) or [1]
        steps = [(before, after or UNKNOWN) for before, after in split.values()] or [(question, UNKNOWN)]
    answer = _first(answer_tag, text)
    if answer is None:
        lines = _lines(text)
        answer = lines[-1] if lines and len(lines[-1]) <= MAX_FALLBACK_ANSWER else UNKNOWN
    return PlanReading(steps, numbers, answer or UNKNOWN)


def search_action(reply: str, empty_query: EmptyQuery = "end") -> SearchAction:
    """What a Search reply asks for (module docstring)."""
    text = strip_thinking(reply)
    query = _first("search", text)
    if query is not None:
        return (
            SearchAction("search", query) if query or empty_query == "released" else SearchAction("invalid")
        )
    if re.search("<end>", text, re.IGNORECASE):
        return SearchAction("end")
    words = _first_line_words(text)
    return SearchAction("search", words) if words else SearchAction("end")


def evidence(reply: str, query: str, passages: list[str]) -> str:
    """The Summary agent's evidence for ``query`` from ``passages`` (the retrieved documents; module docstring)."""
    text = strip_thinking(reply)
    tagged = _first("evidence", text)
    if tagged is not None:
        return tagged
    if not reply:
        return NO_INFORMATION
    words = _first_line_words(text)
    if words:
        return NO_INFORMATION if any(w in words.lower() for w in _NO_INFORMATION_WORDS) else words
    terms = query.split()
    best, best_score = "", 0
    for sentence in (s for passage in passages for s in _SENTENCE.split(passage)):
        score = sum(term.lower() in sentence.lower() for term in terms)
        if score > best_score:
            best, best_score = sentence.strip(), score
    return best or NO_INFORMATION


def update_operation(
    reply: str, numbers: list[int]
) -> tuple[Literal["update", "add", "invalid"], int | None]:
    """``("update", k)`` for a legal ``<Update>tk</Update>`` (``k`` one of the trajectory's step ``numbers``),
    ``("add", None)`` for a legal ``<Add>``, ``("invalid", None)`` (applied as an add) for any reply outside the
    strict format."""
    text = strip_thinking(reply)
    if not update_legal(text, numbers):
        return "invalid", None
    target = _first("Update", text)
    if target is None or _first("Add", text) is not None:
        return "add", None
    return "update", int(target.removeprefix("t"))


def final_answer(
    reply: str, trajectory: list[tuple[str, str]], answer_tag: str, inference: AnswerInference = "skip"
) -> str:
    """The Answer agent's answer (module docstring)."""
    text = strip_thinking(reply)
    tagged = _first(answer_tag, text)
    answered = reply.rsplit(THINK_END, 1)[1].lstrip() if THINK_END in reply else reply
    answer = tagged if tagged is not None else answered.split("\n")[0].strip()
    if answer:
        return answer
    if inference == "released":
        guess = _largest_number_guess(trajectory)
        if guess:
            return guess
    return trajectory[0][1] if trajectory else ""


def _largest_number_guess(trajectory: list[tuple[str, str]]) -> str:
    """The released Answer agent's guess: the sub-question whose sub-answer's first number is largest."""
    best, largest = "", -float("inf")
    for sub_question, sub_answer in trajectory:
        numbers = _LEADING_NUMBER.findall(sub_answer.replace(",", ""))
        try:
            value = float(numbers[0]) if numbers else None
        except ValueError:
            value = None
        if value is not None and value > largest:
            best, largest = _POPULATION.sub("", sub_question), value
    return best
