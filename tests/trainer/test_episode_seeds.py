"""A seeded episode's draws do not depend on the order in which concurrent calls reach the policy."""

from __future__ import annotations

import asyncio
import random

import pytest
from transformers import AutoModelForCausalLM

from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.demos import DemoPolicy, ScriptedChat
from mara_bench.trainer.episode_seeds import EpisodeSeeds, bind_episode_seed, call_seed
from mara_bench.trainer.learner.policy import PolicyChat


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def test_a_prompt_gets_a_new_seed_each_time_and_the_same_sequence_from_the_same_episode_seed():
    first, again, other = EpisodeSeeds(7), EpisodeSeeds(7), EpisodeSeeds(8)
    drawn = [first.for_prompt([1, 2, 3]) for _ in range(3)]
    assert len(set(drawn)) == 3
    assert drawn == [again.for_prompt([1, 2, 3]) for _ in range(3)]
    assert other.for_prompt([1, 2, 3]) != drawn[0]
    assert first.for_prompt([1, 2, 4]) not in drawn
    assert all(0 <= seed < 2**63 for seed in drawn)


def test_no_seed_outside_an_episode():
    assert call_seed([1, 2, 3]) is None


@pytest.mark.parametrize("scheduler", ["static", "continuous"])
def test_episodes_draw_the_same_tokens_whichever_call_reaches_the_policy_first(
    tiny_model, tiny_tokenizer, scheduler
):
    """Two episodes whose calls arrive in opposite orders (a tool answering sooner or later) sample the same
    replies; without episode seeds, the rows would draw from torch's generator in arrival order."""

    async def episode(chat: PolicyChat, seed: int, question: str, delay: float) -> list[str]:
        bind_episode_seed(seed)
        await asyncio.sleep(delay)  # e.g. a search running in a thread
        first = await chat("agent", [{"role": "user", "content": question}])
        second = await chat("agent", [{"role": "user", "content": question}])
        return [first.text, second.text]

    async def rollout(delays: tuple[float, float]) -> list[list[str]]:
        chat = PolicyChat(
            tiny_model, tiny_tokenizer, defaults=Sampling(max_tokens=12, temperature=1.0), scheduler=scheduler
        )
        return list(
            await asyncio.gather(
                episode(chat, 11, "What is 2 + 2?", delays[0]), episode(chat, 12, "Name a city.", delays[1])
            )
        )

    early, late = asyncio.run(rollout((0.0, 0.05))), asyncio.run(rollout((0.05, 0.0)))
    assert early == late
    assert early[0][0] != early[0][1]  # a repeated prompt draws anew


def test_scripted_demonstrations_draw_the_same_replies_whichever_episode_calls_first():
    """The cold start's scripted chat: one shared ``rng`` would hand out draws in arrival order."""

    def reply(role, messages, item, rng, skills) -> str:
        return f"{rng.random():.12f}"

    async def episode(chat: ScriptedChat, seed: int, question: str, delay: float) -> list[str]:
        bind_episode_seed(seed)
        await asyncio.sleep(delay)
        return [(await chat("agent", [{"role": "user", "content": question}])).text for _ in range(2)]

    async def demos(delays: tuple[float, float]) -> list[list[str]]:
        chat = ScriptedChat(DemoPolicy(reply, skills={}), {}, random.Random(0))
        return list(await asyncio.gather(episode(chat, 1, "a", delays[0]), episode(chat, 2, "b", delays[1])))

    early, late = asyncio.run(demos((0.0, 0.02))), asyncio.run(demos((0.02, 0.0)))
    assert early == late
    assert early[0][0] != early[0][1]
