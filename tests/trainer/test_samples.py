"""Samples from episodes: masks, multi-turn merging, and equality with a re-render of the whole conversation."""

from __future__ import annotations

import pytest

from mara_bench.core.episodes import Episode, ModelCall, Reply
from mara_bench.core.samples import Sample
from mara_bench.harness.chat_template import render_prompt
from mara_bench.trainer.samples import samples_from_episode


def _call(id_, role, messages, text, parent=None, response_ids=None):
    return ModelCall(
        id=id_, role=role, messages=messages, reply=Reply(text=text, response_ids=response_ids), parent=parent
    )


def _rerender_to_last_eos(tokenizer, messages):
    ids = render_prompt(tokenizer, messages, add_generation_prompt=False)
    last_eos = max(i for i, t in enumerate(ids) if t == tokenizer.eos_token_id)
    return ids[: last_eos + 1]


def test_single_turn_sample_is_prompt_plus_reply(tiny_tokenizer):
    tok = tiny_tokenizer
    messages = [{"role": "user", "content": "What is 3?"}]
    episode = Episode(system="direct", question="q", calls=[_call(0, "solver", messages, "The answer is 7.")])
    (sample,) = samples_from_episode(episode, tok, group_key="q1", reward=1.0)
    assert sample.prompt_ids == render_prompt(tok, messages)
    assert sample.input_ids == _rerender_to_last_eos(
        tok, [*messages, {"role": "assistant", "content": "The answer is 7."}]
    )
    assert sample.loss_mask == [1] * len(sample.response_ids)
    assert tok.decode(sample.response_ids) == "The answer is 7.<|im_end|>"
    assert (sample.role, sample.group_key, sample.reward, sample.parent) == ("solver", "q1", 1.0, None)


def test_a_single_turn_sample_takes_the_prompt_ids_the_policy_was_given(tiny_tokenizer):
    messages = [{"role": "user", "content": "What is 3?"}]
    given = [*render_prompt(tiny_tokenizer, messages), 9]  # e.g. a template of its own
    reply = Reply(text="7", prompt_ids=given, response_ids=[5, tiny_tokenizer.eos_token_id])
    call = ModelCall(id=0, role="solver", messages=messages, reply=reply)
    (sample,) = samples_from_episode(Episode(system="direct", question="q", calls=[call]), tiny_tokenizer)
    assert sample.prompt_ids == given and sample.prompt_ids is not given  # the tokens the policy saw, copied
    assert sample.response_ids == [5, tiny_tokenizer.eos_token_id]


def test_multi_turn_chain_is_one_sample_with_tool_tokens_masked_out(tiny_tokenizer):
    tok = tiny_tokenizer
    first = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "capital?"},
    ]
    second = [
        *first,
        {"role": "assistant", "content": "search Paris"},
        {"role": "tool", "content": "Paris is the capital."},
    ]
    episode = Episode(
        system="react",
        question="q",
        calls=[_call(0, "agent", first, "search Paris"), _call(1, "agent", second, "The answer is Paris")],
    )
    (sample,) = samples_from_episode(episode, tok)
    conversation = [*second, {"role": "assistant", "content": "The answer is Paris"}]
    assert sample.input_ids == _rerender_to_last_eos(tok, conversation)
    trained = [t for t, m in zip(sample.response_ids, sample.loss_mask, strict=True) if m]
    assert tok.decode(trained) == "search Paris<|im_end|>The answer is Paris<|im_end|>"
    untrained = tok.decode([t for t, m in zip(sample.response_ids, sample.loss_mask, strict=True) if not m])
    assert untrained == (
        "\n<|im_start|>user\n<tool_response>\nParis is the capital.\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


def test_other_roles_are_separate_samples_with_parent_index(tiny_tokenizer):
    tok = tiny_tokenizer
    solver = _call(0, "solver", [{"role": "user", "content": "q"}], "7")
    verifier = _call(1, "verifier", [{"role": "user", "content": "check 7"}], "correct", parent=0)
    episode = Episode(system="vc", question="q", calls=[solver, verifier])
    samples = samples_from_episode(episode, tok)
    assert [s.role for s in samples] == ["solver", "verifier"]
    assert samples[1].parent == 0
    assert [s.role for s in samples_from_episode(episode, tok, roles={"verifier"})] == ["verifier"]


def test_generated_ids_are_used_verbatim_and_truncated_reply_has_no_eos(tiny_tokenizer):
    tok = tiny_tokenizer
    ids = tok("7 7", add_special_tokens=False)["input_ids"]
    call = _call(0, "solver", [{"role": "user", "content": "q"}], "7 7", response_ids=ids)
    (sample,) = samples_from_episode(Episode(system="d", question="q", calls=[call]), tok)
    assert sample.response_ids == ids
    call.reply = Reply(text="7 7", finish_reason="length")
    (sample,) = samples_from_episode(Episode(system="d", question="q", calls=[call]), tok)
    assert sample.response_ids == ids


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError, match="loss_mask has 1 entries but response_ids has 2"):
        Sample(prompt_ids=[1], response_ids=[2, 3], loss_mask=[1])


def test_a_re_rendered_multi_turn_sample_holds_the_exact_prompt_ids_the_policy_generated_from(
    tiny_model_dir, tiny_tokenizer
):
    import asyncio

    from transformers import AutoModelForCausalLM

    import mara_bench.harness.providers.transformers_api as transformers_api
    import mara_bench.trainer.samples as samples
    from mara_bench.harness.providers.sampling import Sampling
    from mara_bench.trainer.learner.policy import PolicyChat

    assert transformers_api.render_prompt is samples.render_prompt  # generation and training: one renderer
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "capital?"},
        {"role": "assistant", "content": "search Paris"},
        {"role": "tool", "content": "Paris is the capital."},
    ]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    chat = PolicyChat(model, tiny_tokenizer, defaults=Sampling(max_tokens=3, seed=0), scheduler="static")
    reply = asyncio.run(chat("agent", messages))
    call = _call(
        0, "agent", messages, reply.text, response_ids=reply.response_ids
    )  # no prompt_ids: re-rendered
    (sample,) = samples_from_episode(Episode(system="react", question="q", calls=[call]), tiny_tokenizer)
    assert sample.input_ids[: len(reply.prompt_ids)] == reply.prompt_ids
    assert sample.input_ids[len(reply.prompt_ids) :] == reply.response_ids
