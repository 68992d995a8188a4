"""MATPO's demonstration policy (planner and worker) for look-up questions over a corpus
(``mara_bench.trainer.tasks.lookup``), in the paper's MCP tool-call format (``mara_bench.harness.systems.matpo``); replies are kept
short so that a tiny model reproduces them intact. The replies read the question from the item, not from the
prompt text, so they play both prompt sets (``mara_bench.harness.systems.matpo`` option ``prompts``: paper or compact).

* Planner, first turn: delegates the country as its subtask through ``search_and_browse``; later turns:
  ``\\boxed{}`` with the capital the worker's summary names (with probability ``skills["planner"]``, else another
  country's capital);
* Worker, first turn: one ``google_search`` for the country's capital (other countries' passages match too); then (and in its final summary) the capital the
  results state for it -- with probability ``skills["worker"]``, else a distractor result's.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from mara_bench.core.episodes import Message
from mara_bench.harness.systems.matpo import PLANNER, PLANNER_SERVER, PLANNER_TOOL, WORKER
from mara_bench.trainer.demos.text import (
    country,
    distractors,
    last_content,
    named_capital,
    other_capitals,
    pick,
    stated_capital,
)

SKILLS = {PLANNER: 0.8, WORKER: 0.7}
"""Defaults; a recipe's ``warmup.demo_skills`` overrides them."""
TOOL_USE = "<use_mcp_tool>\n<server_name>{server}</server_name>\n<tool_name>{tool}</tool_name>\n<arguments>{arguments}</arguments>\n</use_mcp_tool>"


def tool_use(server: str, tool: str, arguments: dict[str, str]) -> str:
    """One ``<use_mcp_tool>`` block."""
    return TOOL_USE.format(server=server, tool=tool, arguments=json.dumps(arguments))


def reply(
    role: str, messages: list[Message], item: dict[str, Any], rng: random.Random, skills: Mapping[str, float]
) -> str:
    name = country(item["question"])
    first_turn = not any(m["role"] == "assistant" for m in messages)
    if role == PLANNER:
        if first_turn:
            return tool_use(PLANNER_SERVER, PLANNER_TOOL, {"subtask": name})
        summary = named_capital(last_content(messages, "user"))
        return f"\\boxed{{{pick(summary, other_capitals(summary), skills[PLANNER], rng)}}}"
    if role == WORKER:
        if first_turn:
            return tool_use("search", "google_search", {"q": f"capital of {name}"})
        previous = last_content(messages, "assistant")
        if "<use_mcp_tool>" not in previous:  # the final summary restates the finding
            return previous
        results = "\n".join(m["content"] for m in messages if m["role"] == "user")
        return pick(stated_capital(results, name), distractors(results, name), skills[WORKER], rng) or "none"
    raise ValueError(f"the matpo demonstration policy has no role {role!r}")
