"""Continuous batching across event loops: a request still running when its event loop stopped (``run_until_complete``
then ``close``, no cancellation) must not break the scheduler for the next loop's requests."""

from __future__ import annotations

import asyncio
import time

from harness.providers.generation import DecodeBatch, Sampling, generate, render_prompt
from harness.providers.scheduler import ContinuousBatcher


def _prompt(tokenizer, question: str) -> list[int]:
    return render_prompt(tokenizer, [{"role": "user", "content": question}])


def _abandon_a_running_request(batcher: ContinuousBatcher, tokenizer, max_tokens: int) -> None:
    """Answer one short request on a loop that then stops and closes while a longer row still decodes."""
    loop = asyncio.new_event_loop()

    async def short_while_long_runs():
        asyncio.ensure_future(
            batcher.submit((_prompt(tokenizer, "long"), Sampling(max_tokens=max_tokens, temperature=0), 0))
        )
        return await batcher.submit((_prompt(tokenizer, "a"), Sampling(max_tokens=3, temperature=0), 0))

    short = loop.run_until_complete(short_while_long_runs())
    loop.close()
    assert len(short.response_ids) == 3


def test_a_row_finishing_after_its_loop_closed_does_not_break_the_next_loop(qwen_pair):
    model, tokenizer = qwen_pair
    batcher = ContinuousBatcher(DecodeBatch(model, tokenizer), batch_size=4, wait_ms=1)
    _abandon_a_running_request(batcher, tokenizer, max_tokens=40)
    deadline = time.monotonic() + 30
    while batcher.batch.rows and time.monotonic() < deadline:  # the old loop's decode thread ends the row
        time.sleep(0.01)
    assert not batcher.batch.rows

    prompt, sampling = _prompt(tokenizer, "c"), Sampling(max_tokens=5, temperature=0)

    async def on_a_new_loop():
        return await asyncio.wait_for(batcher.submit((prompt, sampling, 0)), 30)

    reply = asyncio.run(on_a_new_loop())
    assert reply.response_ids == generate(model, tokenizer, [prompt], sampling)[0].response_ids


def test_a_decode_thread_left_running_by_a_closed_loop_stops_before_the_next_loop_decodes(qwen_pair):
    model, tokenizer = qwen_pair
    batcher = ContinuousBatcher(DecodeBatch(model, tokenizer), batch_size=4, wait_ms=1)
    _abandon_a_running_request(batcher, tokenizer, max_tokens=30_000)  # still decoding: nothing stops it
    started = len(batcher.step_sizes)
    deadline = time.monotonic() + 30
    while len(batcher.step_sizes) < started + 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    prompts = [_prompt(tokenizer, question) for question in ("c", "What is 2+2?")]
    settings = [Sampling(max_tokens=20, temperature=0), Sampling(max_tokens=12, temperature=1.0, seed=5)]

    async def on_a_new_loop():
        requests = (batcher.submit((p, s, 0)) for p, s in zip(prompts, settings, strict=True))
        return await asyncio.wait_for(asyncio.gather(*requests), 30)

    replies = asyncio.run(on_a_new_loop())
    # the new loop's rows decode alone: every step after the old row was dropped has at most these two rows
    assert max(batcher.step_sizes[-20:]) <= 2
    for reply, prompt, sampling in zip(replies, prompts, settings, strict=True):
        assert reply.response_ids == generate(model, tokenizer, [prompt], sampling)[0].response_ids
