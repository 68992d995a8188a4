"""The generation core: batching invariance, logprobs, finish reasons, per-row sampling, context limits."""

from __future__ import annotations

import pytest
import torch

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import PromptTooLongError, generate
from mara_bench.harness.providers.sampling import Sampling

QUESTIONS = [
    "What is 2+2?",
    "Who was president when the first person walked on the Moon? Answer briefly.",
    "x",
    "Find the remainder when 2^100 is divided by 7; think step by step.",
]
GREEDY = Sampling(max_tokens=24, temperature=0)


@pytest.fixture(scope="module")
def prompts(qwen_pair):
    _, tokenizer = qwen_pair
    return [render_prompt(tokenizer, [{"role": "user", "content": q}]) for q in QUESTIONS]


def forward_logprobs(model, prompt_ids, response_ids) -> torch.Tensor:
    """Logprobs of ``response_ids`` from one plain forward pass over prompt + response."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt_ids + response_ids])).logits[0].float()
    log_probs = torch.log_softmax(logits, dim=-1)[len(prompt_ids) - 1 : -1]
    return log_probs.gather(1, torch.tensor(response_ids)[:, None])[:, 0]


def test_render_prompt_uses_the_chat_template(qwen_pair):
    _, tokenizer = qwen_pair
    ids = render_prompt(tokenizer, [{"role": "user", "content": "hi"}])
    assert tokenizer.decode(ids) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_batched_and_unbatched_greedy_outputs_are_identical(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    batched = generate(model, tokenizer, prompts, GREEDY)
    alone = [generate(model, tokenizer, [p], GREEDY)[0] for p in prompts]
    assert [c.response_ids for c in batched] == [c.response_ids for c in alone]
    assert [c.text for c in batched] == [c.text for c in alone]
    assert len({tuple(c.response_ids) for c in batched}) == len(prompts)  # real, distinct outputs


def test_logprobs_equal_a_direct_forward_pass(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    for completion in generate(model, tokenizer, prompts, Sampling(max_tokens=16, temperature=1.0, seed=5)):
        expected = forward_logprobs(model, completion.prompt_ids, completion.response_ids)
        torch.testing.assert_close(torch.tensor(completion.logprobs), expected, atol=1e-5, rtol=1e-5)


def test_top_logprobs_are_the_k_best_tokens_in_order(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    [completion] = generate(model, tokenizer, prompts[:1], GREEDY, top_logprobs=3)
    with torch.no_grad():
        logits = model(torch.tensor([completion.prompt_ids])).logits[0, -1].float()
    best = torch.log_softmax(logits, -1).topk(3)
    assert [t for t, _ in completion.top_logprobs[0]] == best.indices.tolist()
    assert completion.top_logprobs[0][0][0] == completion.response_ids[0]  # greedy picks the best token


def test_finish_reason_length_and_eos_stop(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    [free] = generate(model, tokenizer, prompts[:1], Sampling(max_tokens=10, temperature=0))
    assert (free.finish_reason, len(free.response_ids)) == ("length", 10)
    third = free.response_ids[2]
    assert third not in free.response_ids[:2]
    original = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = [original, third]
    try:
        [stopped] = generate(model, tokenizer, prompts[:1], Sampling(max_tokens=10, temperature=0))
    finally:
        model.generation_config.eos_token_id = original
    assert stopped.finish_reason == "stop"
    assert stopped.response_ids == free.response_ids[:3]  # the end token is kept in the ids


def test_stop_string_cuts_the_text_before_it(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    [free] = generate(model, tokenizer, prompts[1:2], Sampling(max_tokens=20, temperature=0))
    full = tokenizer.decode(free.response_ids, skip_special_tokens=True)

    def prefix(i: int) -> str:
        return tokenizer.decode(free.response_ids[:i], skip_special_tokens=True)

    # a later token whose text first occurs exactly where that token starts
    cut = next(
        i for i in range(3, 20) if full.find(tokenizer.decode([free.response_ids[i]])) == len(prefix(i)) > 0
    )
    stop = tokenizer.decode([free.response_ids[cut]])
    [stopped] = generate(model, tokenizer, prompts[1:2], Sampling(max_tokens=20, temperature=0, stop=(stop,)))
    assert stopped.finish_reason == "stop"
    assert stopped.text == prefix(cut)
    assert stopped.response_ids == free.response_ids[: len(stopped.response_ids)]
    assert len(stopped.response_ids) == cut + 1


def test_a_seeded_row_samples_the_same_alone_or_in_any_batch(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    seeded = Sampling(max_tokens=20, temperature=1.0, seed=11)
    alone = generate(model, tokenizer, prompts[:1], seeded)[0]
    others = [Sampling(max_tokens=5, temperature=0.7, top_p=0.8), GREEDY, Sampling(max_tokens=20, seed=12)]
    mixed = generate(model, tokenizer, prompts, [seeded, *others])
    assert mixed[0].response_ids == alone.response_ids
    assert len(mixed[1].response_ids) == 5
    assert mixed[2].response_ids == generate(model, tokenizer, prompts[2:3], GREEDY)[0].response_ids
    assert (
        mixed[3].response_ids
        != generate(model, tokenizer, prompts[3:4], Sampling(max_tokens=20, seed=13))[0].response_ids
    )


def test_top_k_one_and_tiny_top_p_are_greedy(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    greedy = generate(model, tokenizer, prompts, GREEDY)
    top_k = generate(model, tokenizer, prompts, Sampling(max_tokens=24, temperature=1.5, top_k=1, seed=1))
    top_p = generate(model, tokenizer, prompts, Sampling(max_tokens=24, temperature=1.5, top_p=1e-6, seed=1))
    assert [c.response_ids for c in top_k] == [c.response_ids for c in greedy]
    assert [c.response_ids for c in top_p] == [c.response_ids for c in greedy]


def test_top_k_sampling_only_draws_from_the_k_best_tokens(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    [completion] = generate(
        model, tokenizer, prompts[3:], Sampling(max_tokens=30, temperature=2.0, top_k=2, seed=4)
    )
    with torch.no_grad():
        logits = model(torch.tensor([completion.prompt_ids + completion.response_ids])).logits[0].float()
    top2 = logits[len(completion.prompt_ids) - 1 : -1].topk(2).indices
    assert all(token in top2[i].tolist() for i, token in enumerate(completion.response_ids))
    assert any(token != top2[i, 0] for i, token in enumerate(completion.response_ids))  # not merely greedy


def test_context_limit_truncates_with_length_and_overlong_prompt_raises(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    prompt = prompts[0]
    [cut] = generate(
        model, tokenizer, [prompt], Sampling(max_tokens=50, temperature=0), max_model_len=len(prompt) + 3
    )
    assert (cut.finish_reason, len(cut.response_ids)) == ("length", 3)
    with pytest.raises(
        PromptTooLongError, match=f"prompt 0 has {len(prompt)} tokens but the model's context is 5"
    ):
        generate(model, tokenizer, [prompt], GREEDY, max_model_len=5)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"temperature": -1}, "temperature must be >= 0"),
        ({"top_p": 0}, "top_p must be in"),
        ({"top_k": -2}, "top_k must be >= 0"),
    ],
)
def test_bad_sampling_settings_are_clear_errors(settings, message):
    with pytest.raises(ValueError, match=message):
        Sampling(**settings)


def test_mismatched_settings_count_is_an_error(qwen_pair, prompts):
    model, tokenizer = qwen_pair
    with pytest.raises(ValueError, match="got 4 prompts but 2 sampling settings"):
        generate(model, tokenizer, prompts, [GREEDY, GREEDY])


def test_a_multibyte_stop_string_split_over_byte_tokens_is_found(qwen_pair):
    from mara_bench.harness.providers.sampling import ends_with_stop

    _, tokenizer = qwen_pair
    response = tokenizer("a 日本語")["input_ids"]
    assert len(response) == 11  # each of the 9 UTF-8 bytes of 日本語 is its own token
    assert ends_with_stop(tokenizer, response, ("日本語",))
    assert not ends_with_stop(tokenizer, response[:-1], ("日本語",))


def test_draws_follow_the_distribution_and_never_pick_a_zero_probability_token():
    from mara_bench.harness.providers.sampling import _draw

    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.0, 0.0, 0.0, 2.0]])  # rows need not sum to 1
    generator = torch.Generator().manual_seed(0)
    draws = torch.stack(
        [_draw(probs, torch.rand((2, 1), dtype=torch.float64, generator=generator)) for _ in range(20000)]
    )
    first = torch.bincount(draws[:, 0], minlength=4) / len(draws)
    torch.testing.assert_close(first, torch.tensor([0.1, 0.0, 0.6, 0.3]), atol=0.015, rtol=0)
    assert (draws[:, 1] == 3).all()


def test_rows_draw_together_each_from_its_own_generator_or_the_shared_one_in_row_order():
    from mara_bench.harness.providers.sampling import _uniforms

    seeded = [torch.Generator().manual_seed(seed) for seed in (3, 4)]
    torch.manual_seed(9)
    uniforms = _uniforms([None, seeded[0], None, seeded[1]], torch.device("cpu"))
    torch.manual_seed(9)
    shared = torch.rand((2, 1), dtype=torch.float64)
    alone = [
        torch.rand((1, 1), dtype=torch.float64, generator=torch.Generator().manual_seed(s)) for s in (3, 4)
    ]
    expected = torch.cat([shared[:1], alone[0], shared[1:], alone[1]])
    torch.testing.assert_close(uniforms, expected, atol=0, rtol=0)
