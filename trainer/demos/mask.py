"""M-ASK's demonstration policy (plan, search, summary, update, answer) for look-up questions over a corpus
(``mara_bench.trainer.tasks.lookup``), in the tags ``mara_bench.harness.systems.mask`` parses; replies are kept short so that a tiny
model reproduces them intact. The answer tag and the empty search history follow the system's prompt version.

* Plan: one sub-question (the country) with an unknown answer, or -- with probability ``skills["plan"]``, as a model
  that has seen the question before -- its capital;
* Search: ``<search>capital of country</search>`` (other countries' passages match too) while the search
  history is empty -- with probability ``skills["search"]``, else ``<end>`` at once, as an agent that takes the
  plan for enough -- then ``<end>``;
* Summary: ``<evidence>`` with the capital the retrieved passages state for the country -- with probability
  ``skills["summary"]``, else the first capital they state for another country (a careless reader's pick, the
  same one every time: with ``neighbour_capital_first`` passages, the first capital of the search's result);
* Update: ``<Update>t1</Update>`` (the plan's step 1, now answered), or ``<Add>`` when the trajectory is empty;
* Answer: the capital the trajectory names (with probability ``skills["answer"]``, else
  another country's capital), ``unknown`` when it names none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from mara_bench.core.episodes import Message
from mara_bench.harness.systems.mask import ANSWER, LAYOUTS, PLAN, SEARCH, SUMMARY, UPDATE
from mara_bench.trainer.demos.text import (
    country,
    distractors,
    last_content,
    named_capital,
    other_capitals,
    pick,
    stated_capital,
)

SKILLS = {PLAN: 0.3, SEARCH: 1.0, SUMMARY: 0.7, ANSWER: 0.9}
"""Defaults (the plan's is its recall, the search's how often it searches at all); a recipe's
``warmup.demo_skills`` overrides them."""
UNKNOWN = "unknown"


def answer_tag(messages: list[Message]) -> str:
    """The answer tag of the prompt version the system runs, read from its instructions (the system message, or
    the user message of a set without one)."""
    instructions = last_content(messages, "system") or last_content(messages, "user")
    return next(p.answer_tag for p in LAYOUTS.values() if f"<{p.answer_tag}>" in instructions)


def searched_before(user: str) -> bool:
    """Whether the Search agent's history lists a search (its empty marker depends on the prompt version)."""
    return not any(p.no_searches in user for p in LAYOUTS.values())


def reply(
    role: str, messages: list[Message], item: dict[str, Any], rng: random.Random, skills: Mapping[str, float]
) -> str:
    name = country(item["question"])
    user = last_content(messages, "user")
    if role == PLAN:
        guess = str(item["answer"]) if rng.random() < skills[PLAN] else UNKNOWN
        tag = answer_tag(messages)
        return f"<q1>{name}</q1><a1>{guess}</a1><{tag}>{guess}</{tag}>"
    if role == SEARCH:
        searches = not searched_before(user) and rng.random() < skills[SEARCH]
        return f"<search>capital of {name}</search>" if searches else "<end>"
    if role == SUMMARY:
        careless = distractors(user, name)[:1]
        return f"<evidence>{pick(stated_capital(user, name), careless, skills[SUMMARY], rng)}</evidence>"
    if role == UPDATE:
        return "<Update>t1</Update>" if "t1:" in user else "<Add>t1</Add>"
    if role == ANSWER:
        named = named_capital(user.split("Thinking trajectory:", 1)[-1])
        capital = pick(named, other_capitals(named), skills[ANSWER], rng) if named else UNKNOWN
        tag = answer_tag(messages)
        return f"<{tag}>{capital}</{tag}>"
    raise ValueError(f"the mask demonstration policy has no role {role!r}")
