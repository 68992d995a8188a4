"""The slot KV cache of ``DecodeBatch``: decode steps append in place, a finished row's slot is reused without
moving the running rows, half-empty batches are packed, and every row still gets what it gets alone; a model
whose cache cannot be held in slots runs a batch admitted once on its own cache."""

from __future__ import annotations

import pytest
from _completions import assert_same_completion

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import DecodeBatch, generate
from mara_bench.harness.providers.kv_slots import OwnCache, SlotCache
from mara_bench.harness.providers.sampling import Sampling

QUESTIONS = ["x", "What is 2+2?", "Name three primes.", "Find 2^10 and explain.", "Hi", "What is 7 * 6?"]


def _prompt(tokenizer, question: str) -> list[int]:
    return render_prompt(tokenizer, [{"role": "user", "content": question}])


def _alone(model, tokenizer, question: str, sampling: Sampling):
    return generate(model, tokenizer, [_prompt(tokenizer, question)], sampling)[0]


def _buffers(batch: DecodeBatch) -> list[int]:
    return [layer.key_buffer.data_ptr() for layer in batch.cache.layers]


def test_decode_steps_write_in_place_and_a_freed_slot_takes_a_newcomer(qwen_pair):
    model, tokenizer = qwen_pair
    short, long = Sampling(max_tokens=4, temperature=0), Sampling(max_tokens=40, temperature=0)
    batch = DecodeBatch(model, tokenizer)
    keys = ["a", "b", "c"]
    batch.admit(keys, [_prompt(tokenizer, q) for q in QUESTIONS[:3]], [long, short, long], [0, 0, 0])
    assert isinstance(batch.cache, SlotCache)
    batch.step()
    buffers = _buffers(batch)
    for _ in range(3):  # "b" finishes on the 4th token: its slot is freed, nothing is copied
        batch.step()
    assert [key for key, _ in batch.take_finished()] == ["b"]
    assert _buffers(batch) == buffers and batch.cache.window.rows == 3
    slots = {row.key: row.slot for row in batch.rows}
    batch.admit(["d"], [_prompt(tokenizer, QUESTIONS[3])], [long], [0])  # into b's slot, the others stay put
    assert batch.rows[-1].slot == 1 and {row.key: row.slot for row in batch.rows[:2]} == slots
    assert _buffers(batch) == buffers and batch.cache.window.rows == 3
    done = {}
    while batch.rows:
        batch.step()
        done.update(batch.take_finished())
    for key, question, sampling in (("a", 0, long), ("c", 2, long), ("d", 3, long)):
        assert_same_completion(done[key], _alone(model, tokenizer, QUESTIONS[question], sampling))


def test_a_half_empty_batch_is_packed_and_rows_still_match_alone(qwen_pair):
    model, tokenizer = qwen_pair
    lengths = [2, 3, 4, 5, 30, 30]
    settings = [Sampling(max_tokens=n, temperature=0) for n in lengths]
    batch = DecodeBatch(model, tokenizer)
    batch.admit(range(6), [_prompt(tokenizer, q) for q in QUESTIONS], settings, [0] * 6)
    done = {}
    rows_seen = []
    while batch.rows:
        batch.step()
        done.update(batch.take_finished())
        if batch.rows:
            rows_seen.append(batch.cache.window.rows)
    # 3 of 6 slots freed after the 4th token: packed to the 3 live rows (2 of 3 live stays unpacked)
    assert rows_seen[:5] == [6, 6, 6, 3, 3] and set(rows_seen) == {6, 3}
    for index, question in enumerate(QUESTIONS):
        assert_same_completion(done[index], _alone(model, tokenizer, question, settings[index]))


def test_the_cache_grows_rarely_over_a_long_reply(qwen_pair):
    model, tokenizer = qwen_pair
    batch = DecodeBatch(model, tokenizer)
    batch.admit(["a"], [_prompt(tokenizer, "x")], [Sampling(max_tokens=200, temperature=0)], [0])
    moves, last = 0, _buffers(batch)
    while batch.rows:
        batch.step()
        if batch.rows and _buffers(batch) != last:
            moves, last = moves + 1, _buffers(batch)
    assert 1 <= moves <= 5  # doubling: a handful of reallocations over 200 appended tokens, not one per token


def test_a_sliding_window_model_runs_a_batch_on_its_own_cache_and_takes_no_later_rows(tiny_qwen):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(
        tiny_qwen,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=0,
        layer_types=["sliding_attention"] * 2,
    )
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen, config=config).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen)
    settings = [Sampling(max_tokens=3, temperature=0), Sampling(max_tokens=12, temperature=0)]
    batch = DecodeBatch(model, tokenizer)
    batch.admit(["a", "b"], [_prompt(tokenizer, q) for q in QUESTIONS[:2]], settings, [0, 0])
    assert isinstance(batch.cache, OwnCache)
    for _ in range(4):
        batch.step()
    with pytest.raises(ValueError, match="cannot take new rows"):
        batch.admit(["c"], [_prompt(tokenizer, "Hi")], [settings[0]], [0])
    done = generate(model, tokenizer, [_prompt(tokenizer, q) for q in QUESTIONS[:2]], settings)
    for completion, question, sampling in zip(done, QUESTIONS[:2], settings, strict=True):
        assert_same_completion(completion, _alone(model, tokenizer, question, sampling))


def test_the_cache_stays_bounded_as_trajectories_grow_and_rows_join_and_leave(qwen_pair):
    # M-ASK's rollouts: concurrent episodes make sequential calls whose prompts grow by each reply, rows join
    # the running batch as others leave, and an episode that ends makes way for a fresh one; hundreds of
    # decode steps pass. The buffers must follow the live rows (slots: twice the most rows; columns: a
    # newcomer's width, the window and half the window + 16 spare at a reallocation), never the tokens
    # decoded over the whole workload.
    model, tokenizer = qwen_pair
    episodes, calls_per_episode = 4, 3
    batch = DecodeBatch(model, tokenizer)
    prompts = {e: _prompt(tokenizer, QUESTIONS[e]) for e in range(episodes)}
    calls = dict.fromkeys(range(episodes), 0)
    waiting, steps, longest = list(range(episodes)), 0, 0
    while steps < 400:
        if waiting:
            settings = [Sampling(max_tokens=8, temperature=1.0, seed=steps + e) for e in waiting]
            batch.admit(waiting, [prompts[e] for e in waiting], settings, [0] * len(waiting))
            waiting = []
        longest = max(longest, *(row.cached for row in batch.rows))
        batch.step()
        steps += 1
        for e, done in batch.take_finished():
            calls[e] += 1
            grown = calls[e] < calls_per_episode
            prompts[e] = done.prompt_ids + done.response_ids if grown else _prompt(tokenizer, QUESTIONS[e])
            calls[e] %= calls_per_episode
            waiting.append(e)
        if batch.cache is not None:
            assert batch.cache.slots <= 2 * episodes
            assert batch.cache.columns <= 3 * longest + 32
    assert steps > 3 * longest + 32  # the workload decoded more tokens than the bound: the window shrank
