"""Token-in/token-out: a multi-turn rollout continues from, and trains on, the ids the engine produced, even where
re-tokenising the conversation's text would give other ids."""

from __future__ import annotations

import asyncio

from mara_bench.core.episodes import Episode, ModelCall
from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import Completion
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.learner.policy import PolicyChat
from mara_bench.trainer.samples import samples_from_episode

QUESTION = [{"role": "user", "content": "Say the word."}]


def _spelled(tokenizer, word):
    """``word`` as one token per character: valid ids whose text re-tokenises differently."""
    ids = [tokenizer.convert_tokens_to_ids(ch) for ch in word]
    assert tokenizer.decode(ids) == word
    assert tokenizer(word, add_special_tokens=False)["input_ids"] != ids
    return ids


def test_second_turn_continues_from_the_generated_ids_and_trains_on_them(tiny_tokenizer):
    eos = tiny_tokenizer.eos_token_id
    spelled = _spelled(tiny_tokenizer, "answer") + [eos]
    prompts = []

    def generator(batch, settings):
        prompts.extend(batch)
        return [Completion("answer", "stop", p, list(spelled), [-0.25] * len(spelled)) for p in batch]

    chat = PolicyChat(None, tiny_tokenizer, defaults=Sampling(max_tokens=8), generator=generator)
    follow_up = [*QUESTION, {"role": "assistant", "content": "answer"}, {"role": "user", "content": "Again."}]

    async def two_turns():
        return await chat("solver", QUESTION), await chat("solver", follow_up)

    first, second = asyncio.run(two_turns())
    conversation = render_prompt(tiny_tokenizer, QUESTION) + spelled
    assert prompts[1][: len(conversation)] == conversation  # the engine's ids, not the text's
    rendered = render_prompt(tiny_tokenizer, follow_up)
    assert prompts[1] != rendered and len(prompts[1]) > len(rendered)
    assert tiny_tokenizer.decode(prompts[1]) == tiny_tokenizer.decode(rendered)  # same text, other ids

    episode = Episode(
        system="test",
        question="q",
        calls=[ModelCall(0, "solver", QUESTION, first), ModelCall(1, "solver", follow_up, second)],
    )
    [sample] = samples_from_episode(episode, tiny_tokenizer)
    assert sample.input_ids == prompts[1] + spelled
    trained = [t for t, m in zip(sample.response_ids, sample.loss_mask, strict=True) if m]
    assert trained == spelled + spelled
    known = [lp for lp in sample.rollout_logprobs if lp == lp]  # NaN where the engine generated nothing
    assert known == [-0.25] * (2 * len(spelled))
