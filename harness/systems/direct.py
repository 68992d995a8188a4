"""The ``direct`` system: one model call, the question in, the reply as the final answer (no tools, no roles)."""

from __future__ import annotations

from mara_bench.core.episodes import Chat, Episode, EpisodeRecorder, Toolbox

ROLE = "solver"


async def run(question: str, chat: Chat, toolbox: Toolbox, *, system_prompt: str | None = None) -> Episode:
    """Ask the ``solver`` role once; its whole reply is the answer the judge reads."""
    recorder = EpisodeRecorder("direct", question, chat, toolbox)
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": question})
    call = await recorder.ask(ROLE, messages)
    recorder.episode.final_answer = call.reply.text
    return recorder.episode
