"""The react baseline: one agent with the same tools and tags as MARS System 2, raw tool outputs, no role split."""

from __future__ import annotations

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, ModelCall, Toolbox
from mara_bench.harness.prompts import fill, load_prompt
from mara_bench.harness.systems.options import AtLeastOne
from mara_bench.harness.systems.toolloop import ToolRequest, raw_result, tool_description, tool_loop

ROLE = "agent"
TOOLS = ("search", "scholar", "browse", "python")


async def run(question: str, chat: Chat, toolbox: Toolbox, *, max_turns: AtLeastOne = 10) -> Episode:
    """One react rollout; ``episode.final_answer`` is the agent's ``<answer>`` (``None`` if it never answered)."""
    recorder = EpisodeRecorder("react", question, chat, toolbox)

    async def observe(_: ModelCall, requests: list[ToolRequest]) -> str:
        return "\n\n".join(raw_result(request) for request in requests)

    system_prompt = fill(
        load_prompt("react/agent.system"), {"tool description": tool_description(toolbox.names())}
    )
    await tool_loop(recorder, role=ROLE, system_prompt=system_prompt, max_turns=max_turns, observe=observe)
    return recorder.episode
