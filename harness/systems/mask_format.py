"""M-ASK's released format checks: whether each agent's reply is in its strict format (the ``is_legal_format`` flag
of the ``parse_response`` methods in chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b,
``qa_manager/base_agent.py``), which the released trainer turns into a -1 reward (``mara_bench.trainer.methods.mask``).

Tags match case-insensitively, as there; whitespace alone never makes a reply illegal. Per role:

* plan: only ``<qN>``/``<aN>``/answer-tag blocks, at least one ``<qN>``/``<aN>`` tag, opened in the order q1 a1 q2
  a2 ..., at most 5 sub-questions and none repeated (``PlanningAgent.parse_response``);
* search: at most one ``<search>`` block, nothing outside it and ``<end>``, and one of the two present
  (``SearchAgent.parse_response``);
* summary: one ``<evidence>`` block of at most 75 words and nothing outside it (``SummaryAgent.parse_response``);
* update: one ``<Update>ti</Update>`` naming an existing step ``ti`` or one ``<Add>t(n+1)</Add>`` naming the next
  step exactly (``t`` and a number without leading zeros), nothing outside (``UpdateAgent.parse_response``);
* answer: one non-empty answer-tag block and nothing outside it (``AnswerAgent.parse_response``).

The released code reads the raw reply of a model that does not think; here the reply after any thinking
(``strip_thinking``) is checked, as the system's parsers read it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mara_bench.harness.systems.parsing import strip_thinking

MAX_PLAN_STEPS = 5
"""``PlanningAgent.parse_response`` rule 3: the number of sub-questions is at most 5."""
MAX_EVIDENCE_WORDS = 75
"""``SummaryAgent.parse_response`` rule 3: evidence of more than 75 words is illegal."""
_FLAGS = re.DOTALL | re.IGNORECASE
_STEP = re.compile(r"t([1-9]\d*)")


def _blocks(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<{tag}>(.*?)</{tag}>", _FLAGS)


def _only(text: str, *patterns: re.Pattern[str]) -> bool:
    """Whether nothing but whitespace is left of ``text`` once every match of ``patterns`` is cut out."""
    for pattern in patterns:
        text = pattern.sub("", text)
    return not text.strip()


def plan_legal(text: str, answer_tag: str = "final_answer") -> bool:
    if not text:
        return False
    questions = {int(n): q.strip() for n, q in re.findall(r"<q(\d+)>(.*?)</q\1>", text, _FLAGS)}
    answers = {int(n) for n, _ in re.findall(r"<a(\d+)>(.*?)</a\1>", text, _FLAGS)}
    if not questions and not answers:
        return False
    kept = re.findall(rf"<q\d+>.*?</q\d+>|<a\d+>.*?</a\d+>|<{answer_tag}>.*?</{answer_tag}>", text, _FLAGS)
    if re.sub(r"\s+", "", text) != re.sub(r"\s+", "", "".join(kept)):
        return False
    opened = re.findall(r"<\s*(q|a)(\d+)\s*>", text, re.IGNORECASE)
    top = max(int(number) for _, number in opened)
    expected = [(kind, str(n)) for n in range(1, top + 1) for kind in ("q", "a")]
    if opened != expected[: len(opened)]:
        return False
    subquestions = [questions.get(n, "") for n in sorted(set(questions) | answers)]
    return len(subquestions) <= MAX_PLAN_STEPS and len(set(subquestions)) == len(subquestions)


def search_legal(text: str) -> bool:
    search, end = _blocks("search"), re.compile("<end>", re.IGNORECASE)
    if not text or len(search.findall(text)) > 1 or not _only(text, search, end):
        return False
    return bool(search.search(text) or end.search(text))


def summary_legal(text: str) -> bool:
    evidence = _blocks("evidence")
    found = evidence.findall(text) if text else []
    return len(found) == 1 and _only(text, evidence) and len(found[0].split()) <= MAX_EVIDENCE_WORDS


def update_legal(text: str, steps: int | Sequence[int]) -> bool:
    """``steps``: the trajectory's step numbers before the update (its keys ``t<number>``; a count n: 1 ... n)."""
    numbers = list(range(1, steps + 1)) if isinstance(steps, int) else list(steps)
    update, add = _blocks("Update"), _blocks("Add")
    updates, adds = update.findall(text), add.findall(text)
    if not (updates or adds) or len(updates) > 1 or len(adds) > 1 or not _only(text, update, add):
        return False
    if updates and updates[0].strip() not in {f"t{n}" for n in numbers}:
        return False
    if adds:
        step = _STEP.fullmatch(adds[0].strip())
        return step is not None and int(step.group(1)) == len(numbers) + 1
    return True


def answer_legal(text: str, answer_tag: str = "final_answer") -> bool:
    answer = _blocks(answer_tag)
    found = answer.findall(text) if text else []
    return len(found) == 1 and _only(text, answer) and bool(found[0].strip())


def legal_format(role: str, reply: str, *, answer_tag: str, steps: int | Sequence[int]) -> bool:
    """Whether ``reply`` (a raw reply of role ``role``) is in the released code's strict format; ``steps`` is the
    trajectory the Update agent saw: its step numbers, or its length n (steps 1 ... n)."""
    text = strip_thinking(reply)
    match role:
        case "plan":
            return plan_legal(text, answer_tag)
        case "search":
            return search_legal(text)
        case "summary":
            return summary_legal(text)
        case "update":
            return update_legal(text, steps)
        case "answer":
            return answer_legal(text, answer_tag)
    raise ValueError(f"no M-ASK format check for role {role!r}")
