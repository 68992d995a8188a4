"""Continuous batching: rows joining and leaving a running batch get exactly what they get alone (tokens,
logprobs, finish reasons, stop strings, seeded draws) on both tiny architectures; the scheduler answers each
request when its own row ends, drops cancelled rows, fails only the rows of a failing step; ``-M scheduler``."""

from __future__ import annotations

import asyncio
import logging

import pytest
import torch
from _completions import assert_same_completion
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.batching import RequestBatcher, Waiting
from mara_bench.harness.providers.generation import Completion, DecodeBatch, generate
from mara_bench.harness.providers.kv_slots import unmergeable_cache_reason
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.providers.scheduler import ContinuousBatcher

SHORT, MEDIUM = "x", "What is 2+2?"
LONG = "Find the remainder when 2^100 is divided by 7; think step by step and explain every step."


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def pair(request):
    """The tiny model and tokenizer of each architecture, loaded."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = request.getfixturevalue("tiny_qwen" if request.param == "qwen2" else "tiny_llama")
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def prompt_of(tokenizer, question: str) -> list[int]:
    return render_prompt(tokenizer, [{"role": "user", "content": question}])


def alone(pair, question: str, sampling: Sampling, top: int = 0) -> Completion:
    model, tokenizer = pair
    return generate(model, tokenizer, [prompt_of(tokenizer, question)], sampling, top_logprobs=top)[0]


def forward_logprobs(model, completion: Completion) -> torch.Tensor:
    """Logprobs of the response from one plain forward pass over prompt + response."""
    with torch.no_grad():
        logits = model(torch.tensor([completion.prompt_ids + completion.response_ids])).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)[len(completion.prompt_ids) - 1 : -1]
    return log_probs.gather(1, torch.tensor(completion.response_ids)[:, None])[:, 0]


def steps(batch: DecodeBatch, count: int) -> None:
    for _ in range(count):
        batch.step()
    assert batch.take_finished() == []


def run_to_end(batch: DecodeBatch) -> dict:
    while batch.rows:
        batch.step()
    return dict(batch.take_finished())


def test_rows_admitted_mid_flight_match_running_alone(pair):
    model, tokenizer = pair
    first = Sampling(max_tokens=30, temperature=0)
    late_long = Sampling(
        max_tokens=6, temperature=1.0, top_p=0.9, seed=7
    )  # seeded draws from its own generator
    later_short = Sampling(max_tokens=12, temperature=0)
    batch = DecodeBatch(model, tokenizer)
    batch.admit(["first"], [prompt_of(tokenizer, MEDIUM)], [first], [0])
    steps(batch, 5)
    # the newcomer's prompt is wider than the running cache: the running side is padded on the left
    assert len(prompt_of(tokenizer, LONG)) > len(prompt_of(tokenizer, MEDIUM)) + 5
    batch.admit(["late_long"], [prompt_of(tokenizer, LONG)], [late_long], [0])
    steps(batch, 3)
    batch.admit(["later_short"], [prompt_of(tokenizer, SHORT)], [later_short], [3])  # newcomer side padded
    done = run_to_end(batch)

    expected = {
        "first": alone(pair, MEDIUM, first),
        "late_long": alone(pair, LONG, late_long),
        "later_short": alone(pair, SHORT, later_short, top=3),
    }
    assert set(done) == set(expected)
    for key, single in expected.items():
        assert_same_completion(done[key], single)
        torch.testing.assert_close(
            torch.tensor(done[key].logprobs), forward_logprobs(model, single), atol=1e-5, rtol=1e-5
        )
    # rows leave as soon as they finish: the batch shrinks (all three rows run to their max_tokens here)
    assert [len(c.response_ids) for c in expected.values()] == [30, 6, 12]
    assert batch.step_sizes == [1] * 5 + [2] * 3 + [3] * 3 + [2] * 9 + [1] * 10


def test_stop_strings_and_end_tokens_finish_shared_rows_as_alone(pair):
    model, tokenizer = pair
    greedy = Sampling(max_tokens=20, temperature=0)
    free_long, free_medium = alone(pair, LONG, greedy), alone(pair, MEDIUM, greedy)
    stop = free_long.text[4:6]  # the stopped text ends before its first occurrence
    end_token = free_medium.response_ids[2]  # made an end-of-sequence token: the medium row ends at its third
    assert end_token not in free_long.response_ids
    stopping = Sampling(max_tokens=20, temperature=0, stop=(stop,))
    original = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = [original, end_token]
    try:
        batch = DecodeBatch(model, tokenizer)
        batch.admit(
            ["stopped", "plain"],
            [prompt_of(tokenizer, LONG), prompt_of(tokenizer, SHORT)],
            [stopping, greedy],
            [0, 0],
        )
        steps(batch, 1)
        batch.admit(["ends"], [prompt_of(tokenizer, MEDIUM)], [greedy], [0])
        done = run_to_end(batch)
        expected = {
            "stopped": alone(pair, LONG, stopping),
            "plain": alone(pair, SHORT, greedy),
            "ends": alone(pair, MEDIUM, greedy),
        }
    finally:
        model.generation_config.eos_token_id = original
    for key, single in expected.items():
        assert_same_completion(done[key], single)
    assert (done["ends"].response_ids, done["ends"].finish_reason) == (free_medium.response_ids[:3], "stop")
    cut = free_long.text.find(stop)
    assert (done["stopped"].text, done["stopped"].finish_reason) == (free_long.text[:cut], "stop")
    assert (
        done["stopped"].response_ids
        == free_long.response_ids[: len(done["stopped"].response_ids)]
        != free_long.response_ids
    )


def test_dropping_rows_keeps_the_others_exact(pair):
    model, tokenizer = pair
    greedy = Sampling(max_tokens=10, temperature=0)
    batch = DecodeBatch(model, tokenizer)
    batch.admit(
        ["long", "keep"], [prompt_of(tokenizer, LONG), prompt_of(tokenizer, SHORT)], [greedy] * 2, [0, 0]
    )
    steps(batch, 1)
    batch.drop(["long"])  # its wide prompt's padding columns go with it
    assert [row.key for row in batch.rows] == ["keep"]
    done = run_to_end(batch)
    assert list(done) == ["keep"]
    assert_same_completion(done["keep"], alone(pair, SHORT, greedy))
    assert batch.step_sizes == [2] + [1] * 9


def test_a_model_with_sliding_window_layers_cannot_merge_caches(tiny_qwen):
    from transformers import AutoConfig, AutoModelForCausalLM

    assert unmergeable_cache_reason(AutoModelForCausalLM.from_pretrained(tiny_qwen)) is None
    sliding = AutoModelForCausalLM.from_pretrained(tiny_qwen, config=sliding_config(AutoConfig, tiny_qwen))
    assert unmergeable_cache_reason(sliding) == (
        "its cache has DynamicSlidingWindowLayer layers, not only full-attention DynamicLayers"
    )


def sliding_config(auto_config, path):
    return auto_config.from_pretrained(
        path,
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=0,
        layer_types=["sliding_attention"] * 2,
    )


# --- the scheduler -------------------------------------------------------------------------------------------


def scheduler(pair, batch_size: int = 4, wait_ms: float = 0) -> ContinuousBatcher:
    model, tokenizer = pair
    return ContinuousBatcher(DecodeBatch(model, tokenizer), batch_size=batch_size, wait_ms=wait_ms)


async def steps_reach(batcher: ContinuousBatcher, count: int) -> None:
    while len(batcher.step_sizes) < count:
        await asyncio.sleep(0.001)


async def test_each_request_resolves_when_its_own_row_finishes(pair):
    _, tokenizer = pair
    batcher = scheduler(pair, wait_ms=200)
    short, long = Sampling(max_tokens=2, temperature=0), Sampling(max_tokens=40, temperature=0)
    long_task = asyncio.ensure_future(batcher.submit((prompt_of(tokenizer, LONG), long, 0)))
    short_done = await batcher.submit((prompt_of(tokenizer, SHORT), short, 0))
    assert not long_task.done()
    assert len(batcher.step_sizes) < 40
    assert_same_completion(short_done, alone(pair, SHORT, short))
    assert_same_completion(await long_task, alone(pair, LONG, long))
    assert batcher.batch_sizes == [2]
    assert batcher.step_sizes == [2, 2] + [1] * 38


async def test_a_request_arriving_mid_flight_joins_the_running_batch(pair):
    _, tokenizer = pair
    batcher = scheduler(pair)
    # 300 steps for the first row: room for the late request to join even on a starved event loop
    first, late = Sampling(max_tokens=300, temperature=0), Sampling(max_tokens=8, temperature=1.0, seed=3)
    first_task = asyncio.ensure_future(batcher.submit((prompt_of(tokenizer, MEDIUM), first, 0)))
    await steps_reach(batcher, 4)
    late_done = await batcher.submit((prompt_of(tokenizer, LONG), late, 2))
    assert not first_task.done()
    assert_same_completion(late_done, alone(pair, LONG, late, top=2))
    assert_same_completion(await first_task, alone(pair, MEDIUM, first))
    assert batcher.batch_sizes == [1, 1]
    joined = batcher.step_sizes.index(2)
    assert joined >= 4
    assert batcher.step_sizes == [1] * joined + [2] * 8 + [1] * (300 - joined - 8)


async def test_a_cancelled_request_is_dropped_and_the_others_finish(tiny_qwen, qwen_pair):
    _, tokenizer = qwen_pair
    batcher = scheduler(qwen_pair, wait_ms=100)
    endless, kept = Sampling(max_tokens=5000, temperature=0), Sampling(max_tokens=200, temperature=0)
    doomed = asyncio.ensure_future(batcher.submit((prompt_of(tokenizer, LONG), endless, 0)))
    other = asyncio.ensure_future(batcher.submit((prompt_of(tokenizer, SHORT), kept, 0)))
    await steps_reach(batcher, 3)
    doomed.cancel()
    assert_same_completion(await other, alone(qwen_pair, SHORT, kept))
    with pytest.raises(asyncio.CancelledError):
        await doomed
    cut = batcher.step_sizes.index(1)
    assert 3 <= cut < 200 and batcher.step_sizes == [2] * cut + [1] * (
        200 - cut
    )  # the endless row left early
    assert batcher.batch.rows == []


class FailingModel:
    """The tiny model, except that its forward pass raises while ``fail_when(input_ids)`` is true."""

    def __init__(self, model, fail_when):
        self.model, self.fail_when = model, fail_when

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, input_ids, **kwargs):
        if self.fail_when(input_ids):
            raise RuntimeError("out of memory (simulated)")
        return self.model(input_ids=input_ids, **kwargs)


async def test_a_failing_decode_step_fails_its_rows_and_the_scheduler_recovers(qwen_pair):
    model, tokenizer = qwen_pair
    broken = {"decode": False}
    failing = FailingModel(model, lambda ids: broken["decode"] and ids.shape[1] == 1)
    batcher = ContinuousBatcher(DecodeBatch(failing, tokenizer), batch_size=4, wait_ms=100)
    greedy = Sampling(max_tokens=300, temperature=0)  # still running when the model breaks, even if starved
    running = [
        asyncio.ensure_future(batcher.submit((prompt_of(tokenizer, q), greedy, 0))) for q in (SHORT, LONG)
    ]
    await steps_reach(batcher, 2)
    broken["decode"] = True
    results = await asyncio.gather(*running, return_exceptions=True)
    assert [str(r) for r in results] == ["out of memory (simulated)"] * 2
    broken["decode"] = False
    assert_same_completion(
        await batcher.submit((prompt_of(tokenizer, MEDIUM), greedy, 0)), alone(qwen_pair, MEDIUM, greedy)
    )


async def test_a_failing_prefill_fails_only_the_newcomers(qwen_pair):
    model, tokenizer = qwen_pair
    too_long = len(prompt_of(tokenizer, LONG))
    failing = FailingModel(model, lambda ids: ids.shape[1] >= too_long)
    batcher = ContinuousBatcher(DecodeBatch(failing, tokenizer), batch_size=4, wait_ms=0)
    greedy = Sampling(max_tokens=30, temperature=0)
    running = asyncio.ensure_future(batcher.submit((prompt_of(tokenizer, SHORT), greedy, 0)))
    await steps_reach(batcher, 2)
    with pytest.raises(RuntimeError, match="simulated"):
        await batcher.submit((prompt_of(tokenizer, LONG), greedy, 0))
    assert_same_completion(await running, alone(qwen_pair, SHORT, greedy))
    assert batcher.batch_sizes == [1, 1]


# --- -M scheduler ------------------------------------------------------------------------------------------


def user(text: str) -> list:
    return [ChatMessageUser(content=text)]


CONFIGS = [
    GenerateConfig(max_tokens=4, temperature=0),
    GenerateConfig(max_tokens=12, temperature=1.0, seed=5, logprobs=True, top_logprobs=2),
    GenerateConfig(max_tokens=9, temperature=0, stop_seqs=["e"]),
]


async def test_the_scheduler_option_selects_continuous_or_static_with_the_same_replies(tiny_qwen):
    questions = [SHORT, MEDIUM, LONG]
    replies = {}
    for name, kind in (("continuous", ContinuousBatcher), ("static", RequestBatcher)):
        model = get_model(
            f"local/{tiny_qwen}", memoize=False, scheduler=name, batch_size=3, batch_wait_ms=300
        )
        assert type(model.api.batcher) is kind
        outputs = await asyncio.gather(
            *(model.generate(user(q), config=c) for q, c in zip(questions, CONFIGS, strict=True))
        )
        assert model.api.batcher.batch_sizes[-1] == 3
        replies[name] = [(o.completion, o.stop_reason, o.usage.output_tokens) for o in outputs]
        logprobs = [e.logprob for e in outputs[1].choices[0].logprobs.content]
        replies[name + " logprobs"] = logprobs
    assert replies["continuous"] == replies["static"]
    assert [r[2] for r in replies["static"]][:2] == [4, 12]
    assert replies["continuous logprobs"] == pytest.approx(replies["static logprobs"], abs=1e-5)
    default = get_model(f"local/{tiny_qwen}", memoize=False)
    assert isinstance(default.api.batcher, ContinuousBatcher)
    with pytest.raises(
        ValueError,
        match="-M options: scheduler: 'fifo' is not a valid choice; choose one of continuous, static",
    ):
        get_model(f"local/{tiny_qwen}", memoize=False, scheduler="fifo")


async def test_an_unmergeable_cache_falls_back_to_static_batching_with_the_reason(
    tiny_qwen, tmp_path, caplog
):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    AutoModelForCausalLM.from_pretrained(
        tiny_qwen, config=sliding_config(AutoConfig, tiny_qwen)
    ).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(tiny_qwen).save_pretrained(tmp_path)
    with caplog.at_level(logging.WARNING):
        model = get_model(f"local/{tmp_path}", memoize=False, scheduler="continuous")
    assert type(model.api.batcher) is RequestBatcher
    assert "continuous batching is off (its cache has DynamicSlidingWindowLayer layers" in caplog.text
    output = await model.generate(user(MEDIUM), config=GenerateConfig(max_tokens=3, temperature=0))
    assert output.usage.output_tokens == 3


async def test_a_lone_request_starts_at_once_instead_of_sitting_out_the_wait_window(pair):
    _, tokenizer = pair
    batcher = scheduler(pair, wait_ms=600_000)  # a ten-minute window: only a request that does not wait ends
    sampling = Sampling(max_tokens=5, temperature=0)
    done = await asyncio.wait_for(batcher.submit((prompt_of(tokenizer, MEDIUM), sampling, 0)), timeout=60)
    assert_same_completion(done, alone(pair, MEDIUM, sampling))
    assert batcher.batch_sizes == [1]


async def _ticks_to_settle(batcher: ContinuousBatcher, newcomers: list[Waiting]) -> int:
    """Event-loop ticks until the empty batch's settling ends, one of ``newcomers`` queued on each tick meanwhile."""
    settling = asyncio.ensure_future(batcher._settle())
    ticks = 0
    while not settling.done():
        if newcomers:
            batcher.waiting.append(newcomers.pop(0))
        await asyncio.sleep(0)
        ticks += 1
    return ticks


async def test_a_lone_request_settles_after_one_tick_and_a_trickle_is_still_gathered(qwen_pair):
    _, tokenizer = qwen_pair
    batcher = scheduler(qwen_pair, batch_size=8, wait_ms=600_000)
    loop = asyncio.get_running_loop()
    request = (prompt_of(tokenizer, SHORT), Sampling(max_tokens=1, temperature=0), 0)

    def waiting() -> Waiting:
        return Waiting(request, loop.create_future())

    batcher.waiting = [waiting()]
    assert await _ticks_to_settle(batcher, []) <= 2  # not a round of SETTLE_TICKS for nothing
    batcher.waiting = [waiting()]
    trickle = [waiting() for _ in range(5)]  # one more request on each of the next ticks
    await _ticks_to_settle(batcher, trickle)
    assert not trickle and len(batcher.waiting) == 6  # settling lasted until the last one had come
