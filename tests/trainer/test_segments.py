"""Segment rollouts (``mara_bench.trainer.rollouts.segments``): decoding in fixed-length segments gives what one
unsegmented decode gives when the weights do not change, and each token's behaviour logprob is the sampling
weights' own."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch
from transformers import AutoModelForCausalLM

from mara_bench.core.samples import Sample
from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import generate
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.learner.logprobs import response_scores
from mara_bench.trainer.learner.packing import micro_batches
from mara_bench.trainer.rollouts.segments import SegmentedChat

TEMPERATURE = 0.85
QUESTIONS = ("What is 2 + 5?", "Add 3 and 4, then explain.", "hi")


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def _chat(model, tokenizer, segment_tokens: int, versions: list[int] | None = None) -> SegmentedChat:
    def before_round(starts_calls: bool) -> int:
        return versions.pop(0) if versions else 0

    return SegmentedChat(
        model,
        tokenizer,
        defaults=Sampling(max_tokens=20, temperature=TEMPERATURE),
        segment_tokens=segment_tokens,
        before_round=before_round,
        lock=threading.RLock(),
    )


def _ask_all(chat: SegmentedChat) -> list:
    async def main():
        calls = asyncio.gather(*[chat("solver", [{"role": "user", "content": q}]) for q in QUESTIONS])
        driver = asyncio.ensure_future(calls)
        while await chat.run_round():
            pass
        return await driver

    return asyncio.run(main())


def _scores(model, prompt: list[int], response: list[int]) -> list[float]:
    sample = Sample(prompt_ids=prompt, response_ids=response, loss_mask=[1] * len(response))
    [batch] = micro_batches([sample], 4096)
    with torch.no_grad():
        return response_scores(model, batch, TEMPERATURE).logprobs.tolist()


@pytest.mark.parametrize("segment_tokens", [1, 3, 7])
def test_segmented_decoding_repeats_the_unsegmented_tokens_and_logprobs(
    tiny_model, tiny_tokenizer, segment_tokens
):
    prompts = [render_prompt(tiny_tokenizer, [{"role": "user", "content": q}]) for q in QUESTIONS]
    torch.manual_seed(11)
    whole = generate(tiny_model, tiny_tokenizer, prompts, Sampling(max_tokens=20, temperature=TEMPERATURE))
    torch.manual_seed(11)
    chat = _chat(tiny_model, tiny_tokenizer, segment_tokens)
    replies = _ask_all(chat)
    assert (
        max(len(r.response_ids) for r in replies) > segment_tokens
    )  # some call really ran in several segments
    assert len(chat.segments) > 1
    for reply, done in zip(replies, whole, strict=True):
        assert reply.response_ids == done.response_ids
        assert reply.finish_reason == done.finish_reason
        assert reply.text == done.text
        assert reply.logprobs == pytest.approx(done.logprobs, abs=1e-4)
        behaviour = chat.behaviour(reply)
        assert behaviour.version == 0
        assert behaviour.logprobs == pytest.approx(
            _scores(tiny_model, reply.prompt_ids, reply.response_ids), abs=1e-4
        )


def test_a_call_continued_under_new_weights_keeps_each_segments_own_logprobs(tiny_model_dir, tiny_tokenizer):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    original = {name: p.detach().clone() for name, p in model.named_parameters()}
    versions = [0, 1, 1, 1, 1, 1, 1, 1]
    chat = _chat(model, tiny_tokenizer, 4, versions)
    first_round = chat.run_round

    async def round_then_perturb() -> bool:  # the weights change after the first segment (a newer policy)
        went = await first_round()
        if len(chat.segments) == 1:
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(0.05 * torch.randn_like(p))
        return went

    chat.run_round = round_then_perturb
    torch.manual_seed(3)
    [reply, *_] = _ask_all(chat)
    assert len(reply.response_ids) > 4
    behaviour = chat.behaviour(reply)
    assert behaviour.version == 0  # the oldest weights it was sampled under
    new = _scores(model, reply.prompt_ids, reply.response_ids)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(original[name])
    old = _scores(model, reply.prompt_ids, reply.response_ids)
    assert behaviour.logprobs[:4] == pytest.approx(old[:4], abs=1e-4)
    assert behaviour.logprobs[4:] == pytest.approx(new[4:], abs=1e-4)
    assert old[4:] != pytest.approx(
        new[4:], abs=1e-3
    )  # the perturbation did change the later tokens' logprobs


def test_per_call_seeds_are_refused(tiny_model, tiny_tokenizer):
    chat = _chat(tiny_model, tiny_tokenizer, 4)
    with pytest.raises(ValueError, match="drop the call's seed"):
        asyncio.run(chat("solver", [{"role": "user", "content": "hi"}], seed=1))
