"""PolicyChat on successive event loops: a loop that stops without cancelling the scheduler (``run_until_complete``
then ``close``) must not leave later calls on a new loop waiting forever."""

from __future__ import annotations

import asyncio
import gc

import pytest
from transformers import AutoModelForCausalLM

from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.learner.policy import PolicyChat


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def _ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _fresh_reply(model, tokenizer, text: str, **sampling):
    chat = PolicyChat(model, tokenizer, defaults=Sampling(temperature=0.0, max_tokens=6), scheduler="static")
    return asyncio.run(chat("solver", _ask(text), **sampling))


@pytest.mark.parametrize("scheduler", ["continuous", "static"])
def test_a_call_on_a_new_loop_resolves_after_the_old_loop_closed_mid_rollout(
    tiny_model, tiny_tokenizer, scheduler
):
    chat = PolicyChat(
        tiny_model, tiny_tokenizer, defaults=Sampling(temperature=0.0, max_tokens=6), scheduler=scheduler
    )

    async def short_while_long_runs():
        asyncio.ensure_future(chat("solver", _ask("long"), max_tokens=200))
        return await chat("solver", _ask("short"), max_tokens=3)

    loop = asyncio.new_event_loop()
    assert len(loop.run_until_complete(short_while_long_runs()).response_ids) == 3
    loop.close()

    async def next_rollout():
        first = await asyncio.wait_for(chat("solver", _ask("next")), 30)
        running = asyncio.ensure_future(chat("solver", _ask("running"), max_tokens=12))
        await asyncio.sleep(0)
        gc.collect()  # the abandoned scheduler of the old loop is finalised: it must not touch this loop's calls
        return first, await asyncio.wait_for(running, 30)

    first, running = asyncio.run(next_rollout())
    assert first.response_ids == _fresh_reply(tiny_model, tiny_tokenizer, "next").response_ids
    assert (
        running.response_ids
        == _fresh_reply(tiny_model, tiny_tokenizer, "running", max_tokens=12).response_ids
    )
