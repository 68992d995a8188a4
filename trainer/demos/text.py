"""Small readers the look-up demonstration policies share: the last message of a role, the country a question
asks about, the capitals a text states or names."""

from __future__ import annotations

import re

from mara_bench.core.episodes import Message
from mara_bench.trainer.tasks.lookup import CAPITALS, KNOWN_CAPITALS, POOL

_COUNTRY = re.compile(r"capital of (\w+)")


def last_content(messages: list[Message], role: str) -> str:
    """The content of the last ``role`` message ("" when there is none)."""
    return next((m["content"] for m in reversed(messages) if m["role"] == role), "")


def country(question: str) -> str:
    """The country a look-up question asks about ("What is the capital of Arvena?" -> "Arvena")."""
    match = _COUNTRY.search(question)
    if match is None:
        raise ValueError(f"not a look-up question (no 'capital of <country>'): {question!r}")
    return match.group(1)


def stated_capital(text: str, of: str) -> str | None:
    """The capital a passage in ``text`` states for ``of`` ("The capital of Arvena is Lomir" -> "Lomir")."""
    match = re.search(rf"capital of {re.escape(of)} is (\w+)", text)
    return match.group(1) if match else None


def distractors(text: str, of: str) -> list[str]:
    """Capitals passages in ``text`` state for countries other than ``of`` (what a careless reader picks)."""
    return [capital for name, capital in re.findall(r"capital of (\w+) is (\w+)", text) if name != of]


def named_capital(text: str) -> str | None:
    """The last capital of the corpus that ``text`` names (a distillate, a summary, a trajectory step)."""
    found = [(text.rfind(capital), capital) for capital in KNOWN_CAPITALS if capital in text]
    return max(found)[1] if found else None


def pick(right: str | None, wrong: list[str], skill: float, rng) -> str | None:
    """``right`` with probability ``skill`` (or when there is nothing else), else one of ``wrong``."""
    if wrong and (right is None or rng.random() >= skill):
        return rng.choice(wrong)
    return right


def other_capitals(capital: str | None) -> list[str]:
    """Every other capital of ``capital``'s family: the hand-written table (also for ``None``), else the
    generated pool."""
    fixed = capital is None or capital in CAPITALS.values()
    family = CAPITALS.values() if fixed else (name for _, name in POOL)
    return [c for c in family if c != capital]
