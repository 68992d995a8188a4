"""Continuous batching edge cases: a request still running when its event loop stopped (``run_until_complete``
then ``close``, no cancellation) must not break the scheduler for the next loop's requests; rows that joined late
reach the context end (``max_model_len``) as they would alone; a batch that empties starts afresh."""

from __future__ import annotations

import asyncio
import time

import pytest
from _completions import assert_same_completion

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import DecodeBatch, generate
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.providers.scheduler import ContinuousBatcher


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


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def model_pair(request):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = request.getfixturevalue("tiny_qwen" if request.param == "qwen2" else "tiny_llama")
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def _alone(model, tokenizer, prompt, sampling, *, limit=None, top=0):
    return generate(model, tokenizer, [prompt], sampling, max_model_len=limit, top_logprobs=top)[0]


def test_rows_joining_late_reach_the_context_end_as_they_would_alone(model_pair):
    model, tokenizer = model_pair
    short, medium = _prompt(tokenizer, "x"), _prompt(tokenizer, "What is 2+2?")
    wide = _prompt(tokenizer, "Find the remainder when 2^100 is divided by 7; explain every step. " * 3)
    limit = len(wide) + 8  # the wide row has room for 8 tokens; the short one for many more
    rows = {
        "short": (short, Sampling(max_tokens=500, temperature=0), 0),
        "wide": (wide, Sampling(max_tokens=500, temperature=0.8, seed=3), 2),
        "medium": (medium, Sampling(max_tokens=40, temperature=1.0, top_k=5, seed=4), 1),
    }
    batch = DecodeBatch(model, tokenizer, max_model_len=limit)
    for key, wait in (("short", 20), ("wide", 3), ("medium", 0)):  # each joins rows that decoded a while
        prompt, sampling, top = rows[key]
        batch.admit([key], [prompt], [sampling], [top])
        for _ in range(wait):
            batch.step()
    while batch.rows:
        batch.step()
    done = dict(batch.take_finished())
    # both context-bound rows end exactly at the context end; the medium row at its max_tokens
    assert {key: (c.finish_reason, len(c.prompt_ids) + len(c.response_ids)) for key, c in done.items()} == {
        "short": ("length", limit),
        "wide": ("length", limit),
        "medium": ("length", len(medium) + 40),
    }
    for key, (prompt, sampling, top) in rows.items():
        assert_same_completion(done[key], _alone(model, tokenizer, prompt, sampling, limit=limit, top=top))


def test_a_batch_that_empties_takes_new_rows_as_if_fresh(model_pair):
    model, tokenizer = model_pair
    first, second = _prompt(tokenizer, "What is 2+2?"), _prompt(tokenizer, "x")
    batch = DecodeBatch(model, tokenizer)
    batch.admit(["first"], [first], [Sampling(max_tokens=5, temperature=0)], [0])
    while batch.rows:
        batch.step()
    assert [key for key, _ in batch.take_finished()] == ["first"]
    later = Sampling(max_tokens=12, temperature=0.7, seed=9)
    batch.admit(["second"], [second], [later], [3])
    assert batch.cache.attention_mask().shape == (1, len(second))  # nothing of the first row's cache is left
    while batch.rows:
        batch.step()
    [(key, completion)] = batch.take_finished()
    assert key == "second"
    assert_same_completion(completion, _alone(model, tokenizer, second, later, top=3))
