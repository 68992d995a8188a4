"""MARS's demonstration policy (System 2 and System 1) for look-up questions over a corpus
(``mara_bench.trainer.tasks.lookup``); replies are kept short so that a tiny model reproduces them intact.

* System 2, first turn: one ``search`` tool call with its purpose (the query also matches other countries'
  passages, so System 1's bin holds distractors); later turns:
  ``<answer>`` with the capital the System-1 distillate names (with probability ``skills["system2"]``, else another
  country's capital);
* System 1: the capital its bin's pages state for the question's country, with probability ``skills["system1"]``,
  else a distractor page's capital (when the bin has one).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from mara_bench.core.episodes import Message
from mara_bench.harness.systems.mars import SYSTEM1, SYSTEM2
from mara_bench.trainer.demos.text import (
    country,
    distractors,
    last_content,
    named_capital,
    other_capitals,
    pick,
    stated_capital,
)

SKILLS = {SYSTEM1: 0.7, SYSTEM2: 0.8}
"""Defaults; a recipe's ``warmup.demo_skills`` overrides them."""


def reply(
    role: str, messages: list[Message], item: dict[str, Any], rng: random.Random, skills: Mapping[str, float]
) -> str:
    name = country(item["question"])
    if role == SYSTEM1:
        pages = last_content(messages, "user")
        return pick(stated_capital(pages, name), distractors(pages, name), skills[SYSTEM1], rng) or "none"
    if role == SYSTEM2:
        if not any(m["role"] == "assistant" for m in messages):
            call = {"name": "search", "arguments": {"query": f"capital of {name}"}, "purpose": "capital"}
            return f"<tool_call>{json.dumps(call)}</tool_call>"
        distilled = named_capital(last_content(messages, "user"))
        return f"<answer>{pick(distilled, other_capitals(distilled), skills[SYSTEM2], rng)}</answer>"
    raise ValueError(f"the mars demonstration policy has no role {role!r}")
