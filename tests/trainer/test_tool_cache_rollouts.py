"""A training rollout records its tool calls, and a rollout with ``tool_cache: replay`` (the recipe's
``task.system_options``, as ``mara train --tool-cache``) gives identical episodes without running a tool: the
trainer's own toolbox construction (``mara_bench.trainer.rollouts.rollout.task_toolbox``) over the lookup task's corpus
toolbox, MARS as the system, and a deterministic chat standing in for the policy."""

from __future__ import annotations

import asyncio
import json
import random
import re
from argparse import Namespace

import pytest
from _e2e_helpers import ROOT

from mara_bench.core.episodes import Reply, Toolbox
from mara_bench.harness.systems import get_system
from mara_bench.trainer.config import load_config
from mara_bench.trainer.rollouts.rollout import Rollout, task_toolbox
from mara_bench.trainer.run.cli import with_tool_cache_flags
from mara_bench.trainer.tasks.lookup import lookup_task

ANSWER = re.compile(r"The capital of \w+ is (\w+)")


class ReadingChat:
    """System 2 searches for the question, System 1 repeats the passage, System 2 answers from the notes."""

    tokenizer = None

    async def __call__(self, role, messages, **sampling) -> Reply:
        last = messages[-1]["content"]
        if role == "system1":
            found = ANSWER.findall(last)
            return Reply(
                text=f"Notes: The capital of X is {found[0]}." if found else "Notes: none", model="fake"
            )
        if "<tool_response>" in last:
            found = ANSWER.findall(last)
            return Reply(text=f"<answer>{found[0] if found else 'unknown'}</answer>", model="fake")
        call = json.dumps({"name": "search", "arguments": {"query": last}, "purpose": "find it"})
        return Reply(text=f"<tool_call>{call}</tool_call>", model="fake")


async def _refuse(**_):
    raise AssertionError("replay ran the task's own tool")


def rollout(tool_settings: dict, toolbox_override: Toolbox | None = None) -> tuple[Rollout, list[dict]]:
    task = lookup_task(n_prompts=3, k=2, tools=["search"])
    if toolbox_override is not None:
        task.toolbox = toolbox_override
    system = get_system("mars")
    toolbox = task_toolbox(task, system, tool_settings)
    made = Rollout(task, system, {"max_turns": 2}, toolbox, ReadingChat(), None, None, group_size=2)
    return made, task.items


def episodes(made: Rollout, items: list[dict]) -> list[dict]:
    """The rollout's episodes as plain data, less the wall-clock seconds each tool call took."""
    random.seed(0)
    groups, _ = asyncio.run(made.groups(items))
    dumped = [episode.to_dict() for group in groups for episode in group]
    for episode in dumped:
        for tool_call in episode["tool_calls"]:
            tool_call.pop("seconds")
    return dumped


def test_a_replayed_rollout_reproduces_the_recorded_one_without_running_a_tool(tmp_path):
    settings = {"tool_store": str(tmp_path / "store"), "tool_snapshot": "train1"}
    recorded, items = rollout({**settings, "tool_cache": "record"})
    first = episodes(recorded, items)
    assert recorded.toolbox.cache.counts.record == 6  # 3 questions x group of 2, one search each
    assert {episode["final_answer"] for episode in first} == {item["answer"] for item in items}

    replayed, items = rollout({**settings, "tool_cache": "replay"}, Toolbox({"search": _refuse}))
    assert episodes(replayed, items) == first
    counts = replayed.toolbox.cache.counts
    assert (counts.hit, counts.miss, counts.live) == (6, 0, 0)


def test_a_task_with_its_own_toolbox_still_refuses_other_tool_settings(tmp_path):
    with pytest.raises(ValueError, match=r"remove the tool settings \['k'\].*only tool_cache, tool_snapshot"):
        rollout({"tool_cache": "record", "tool_store": str(tmp_path), "k": 3})


def test_mara_train_tool_flags_set_the_recipes_tool_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(ROOT / "trainer" / "recipes" / "mars-tiny.yaml")
    flags = Namespace(tool_cache="replay", tool_snapshot="train1", tool_store="store")
    options = with_tool_cache_flags(config, flags).task.system_options
    assert options["tool_cache"] == "replay" and options["tool_snapshot"] == "train1"
    assert options["tool_store"] == str(tmp_path / "store")  # a path from the directory the command ran in
    assert options["max_turns"] == 3  # the recipe's own options kept
