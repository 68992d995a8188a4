"""Micro-batch layouts score like rows run alone; the policy Chat batches concurrent calls and reports logprobs."""

from __future__ import annotations

import asyncio

import pytest
import torch
from transformers import AutoModelForCausalLM

import mara_bench.trainer.learner.policy as policy_module
from mara_bench.core.samples import Sample
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.learner.packing import (
    micro_batches,
    padding_share,
    plan_buckets,
    plan_packs,
    response_logits,
    token_logprobs,
)
from mara_bench.trainer.learner.policy import PolicyChat


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def _samples(shapes):
    g = torch.Generator().manual_seed(0)
    return [
        Sample(
            prompt_ids=torch.randint(3, 500, (p,), generator=g).tolist(),
            response_ids=torch.randint(3, 500, (r,), generator=g).tolist(),
            loss_mask=[1] * r,
        )
        for p, r in shapes
    ]


def test_plans_respect_budget_and_padding_bound():
    assert plan_packs([5, 9, 3, 8, 2, 7], 10) == [[1], [3, 4], [2, 5], [0]]
    # longest first; 8 joins 9 (pad 1/18 <= 0.2), budget 20 caps that at 2 rows; 5 joins 8 (pad 3/16 <= 0.2),
    # a third row would need 24 slots; 4 joins 5 (pad 1/10)
    assert plan_buckets([9, 8, 8, 5, 5, 4], 20, 0.2) == [[0, 1], [2, 3], [4, 5]]


def test_a_short_row_joins_while_the_micro_batch_padding_share_stays_in_bound():
    # 7 is shorter than 0.9 x 10, but the micro-batch pads 3 of 40 slots (7.5% <= 10%): one forward, not two
    assert plan_buckets([10, 10, 10, 7], 100, 0.1) == [[0, 1, 2, 3]]
    assert plan_buckets([10, 10, 10, 5], 100, 0.1) == [[0, 1, 2], [3]]  # 5 of 40 slots would be 12.5%


@pytest.mark.parametrize("max_padding", [0.0, 0.1, 0.3])
def test_every_bucket_keeps_the_budget_and_the_padding_share(max_padding):
    lengths = torch.randint(1, 60, (200,), generator=torch.Generator().manual_seed(1)).tolist()
    buckets = plan_buckets(lengths, 256, max_padding)
    assert sorted(r for b in buckets for r in b) == list(range(200))
    for bucket in buckets:
        slots = len(bucket) * max(lengths[r] for r in bucket)
        assert slots <= 256 or len(bucket) == 1
        assert 1 - sum(lengths[r] for r in bucket) / slots <= max_padding + 1e-12


@pytest.mark.parametrize("layout", ["bucket", "pack"])
def test_layouts_score_like_each_row_alone(tiny_model, layout):
    samples = _samples([(5, 3), (7, 9), (4, 1), (10, 6), (6, 6)])
    batches = micro_batches(samples, token_budget=40, layout=layout, max_padding=0.5)
    assert sorted(r for b in batches for r in b.rows) == list(range(5))
    assert all(b.slots <= 40 for b in batches)
    with torch.no_grad():
        for batch in batches:
            scores = token_logprobs(response_logits(tiny_model, batch), batch.targets).split(
                batch.response_lengths
            )
            for row, score in zip(batch.rows, scores, strict=True):
                sample = samples[row]
                logits = tiny_model(torch.tensor([sample.input_ids])).logits[0]
                alone = torch.log_softmax(logits, -1)[len(sample.prompt_ids) - 1 : -1]
                expected = alone.gather(-1, torch.tensor(sample.response_ids)[:, None])[:, 0]
                torch.testing.assert_close(score, expected, atol=1e-5, rtol=1e-5)
    share = padding_share(batches)
    assert share == 0.0 if layout == "pack" else 0 < share <= 0.5


def test_bucket_padding_share_is_hand_computed():
    samples = _samples([(4, 4), (4, 2)])  # lengths 8 and 6 in one bucket of width 8: 2 pads in 16 slots
    assert padding_share(micro_batches(samples, token_budget=64, layout="bucket", max_padding=0.5)) == 2 / 16


def test_concurrent_calls_are_one_generate_batch_with_matching_logprobs(
    tiny_model, tiny_tokenizer, monkeypatch
):
    batch_sizes = []
    real_generate = policy_module.generate

    def counting_generate(model, tokenizer, prompts, sampling):
        batch_sizes.append(len(prompts))
        return real_generate(model, tokenizer, prompts, sampling)

    monkeypatch.setattr(policy_module, "generate", counting_generate)
    chat = PolicyChat(tiny_model, tiny_tokenizer, defaults=Sampling(max_tokens=5))
    questions = [[{"role": "user", "content": f"What is {i}?"}] for i in range(6)]

    async def ask_all():
        return await asyncio.gather(*[chat("solver", q, temperature=0.7) for q in questions])

    torch.manual_seed(0)
    replies = asyncio.run(ask_all())
    assert batch_sizes == [6]
    for reply in replies:
        assert len(reply.response_ids) == len(reply.logprobs) == reply.output_tokens <= 5
        ids = torch.tensor([reply.prompt_ids + reply.response_ids])
        with torch.no_grad():
            logits = tiny_model(ids).logits[0, len(reply.prompt_ids) - 1 : -1]
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(reply.response_ids)[:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(reply.logprobs), expected, atol=1e-4, rtol=1e-4)


def test_unknown_sampling_setting_is_named(tiny_model, tiny_tokenizer):
    chat = PolicyChat(tiny_model, tiny_tokenizer)
    with pytest.raises(ValueError, match=r"unknown sampling settings \['max_new_tokens'\]"):
        asyncio.run(chat("solver", [{"role": "user", "content": "hi"}], max_new_tokens=3))


def test_a_groups_repeated_prompt_is_rendered_once_and_each_reply_owns_its_ids(
    tiny_model, tiny_tokenizer, monkeypatch
):
    renders = []
    real_render = policy_module.render_prompt

    def counting_render(tokenizer, messages, **kwargs):
        renders.append(messages[-1]["content"])
        return real_render(tokenizer, messages, **kwargs)

    monkeypatch.setattr(policy_module, "render_prompt", counting_render)
    chat = PolicyChat(tiny_model, tiny_tokenizer, defaults=Sampling(max_tokens=2))
    questions = [[{"role": "user", "content": f"What is {i % 2}?"}] for i in range(8)]

    async def ask_all():
        return await asyncio.gather(*[chat("solver", q) for q in questions])

    replies = asyncio.run(ask_all())
    assert sorted(renders) == ["What is 0?", "What is 1?"]
    assert replies[0].prompt_ids == replies[2].prompt_ids == real_render(tiny_tokenizer, questions[0])
    assert replies[0].prompt_ids is not replies[2].prompt_ids
