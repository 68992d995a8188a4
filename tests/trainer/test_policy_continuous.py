"""PolicyChat's continuous scheduler: an episode's next call joins a running batch, replies match the static
scheduler for greedy and seeded rows, unseeded runs repeat under one torch seed, failures reach every caller."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
import torch
from transformers import AutoModelForCausalLM

from mara_bench.harness.providers.batching import RequestBatcher
from mara_bench.harness.providers.generation import PromptTooLongError
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.trainer.config import ConfigError, RolloutConfig, TrainConfig, from_dict
from mara_bench.trainer.learner.policy import PolicyChat

GREEDY = {"temperature": 0.0}


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def _ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def _two_step_episode(chat: PolicyChat, name: str, tokens: int, **sampling):
    """Two calls in a row, the second quoting the first reply (so it can only start once the first is done)."""
    first = await chat("solver", _ask(f"{name}: what is 3 + 4?"), max_tokens=tokens, **sampling)
    second = await chat("verifier", _ask(f"{name} check: {first.text}"), max_tokens=tokens, **sampling)
    return [first, second]


async def _long_episode(chat: PolicyChat, tokens: int, **sampling):
    return [await chat("solver", _ask("long: explain 3 + 4"), max_tokens=tokens, **sampling)]


def _rollout(chat: PolicyChat, short: int, long: int, sampling: dict):
    """One sequential episode and one long single call in the same gather; the replies in call order."""

    async def both():
        episodes = await asyncio.gather(
            _two_step_episode(chat, "a", short, **sampling), _long_episode(chat, long, **sampling)
        )
        return [reply for episode in episodes for reply in episode]

    return asyncio.run(both())


def _tokens(replies):
    return [(r.prompt_ids, r.response_ids, r.finish_reason) for r in replies]


@pytest.mark.parametrize("sampling", [GREEDY, {"temperature": 1.0, "seed": 11}], ids=["greedy", "seeded"])
def test_next_call_joins_the_running_batch_and_replies_match_static(tiny_model, tiny_tokenizer, sampling):
    continuous = PolicyChat(tiny_model, tiny_tokenizer, scheduler="continuous")
    static = PolicyChat(tiny_model, tiny_tokenizer, scheduler="static")
    replies = _rollout(continuous, 3, 12, sampling)
    # steps 1-3: first call + long row; the first call ends at step 3 and the second call joins at step 4 (it
    # ends at step 6, the long row at step 12); statically it would wait for the long row (15 steps in all)
    assert continuous.batch.step_sizes == [2] * 6 + [1] * 6
    assert [len(r.response_ids) for r in replies] == [
        3,
        3,
        12,
    ]  # the tiny model never ends early: all "length"
    baseline = _rollout(static, 3, 12, sampling)
    assert _tokens(replies) == _tokens(baseline)
    for ours, theirs in zip(replies, baseline, strict=True):
        torch.testing.assert_close(
            torch.tensor(ours.logprobs), torch.tensor(theirs.logprobs), atol=1e-5, rtol=0
        )
    # the static scheduler is the local provider's: the first call and the long row together, then the second
    assert isinstance(static.static, RequestBatcher) and static.static.batch_sizes == [2, 1]


def test_unseeded_sampling_repeats_under_the_same_torch_seed(tiny_model, tiny_tokenizer):
    def run(seed: int):
        chat = PolicyChat(
            tiny_model, tiny_tokenizer, defaults=Sampling(temperature=1.0), scheduler="continuous"
        )
        torch.manual_seed(seed)

        async def group():
            return await asyncio.gather(
                *[_two_step_episode(chat, f"q{i}", tokens) for i, tokens in enumerate((2, 5, 3, 7))],
                _long_episode(chat, 9),
            )

        return [_tokens(episode) for episode in asyncio.run(group())], list(chat.batch.step_sizes)

    first, again, other = run(0), run(0), run(1)
    assert first == again
    # 5 rows at first; the 2-token row's second call joins at step 3, the 3-token one's at step 4, ...
    assert first[1][:4] == [5, 5, 5, 5]
    assert first[0] != other[0]  # the draws come from torch's global generator


def test_a_failing_step_fails_its_calls_keeps_earlier_replies_and_the_chat_recovers(
    tiny_model, tiny_tokenizer
):
    chat = PolicyChat(tiny_model, tiny_tokenizer, defaults=Sampling(**GREEDY), scheduler="continuous")
    real_step, steps = chat.batch.step, []

    def failing_third_step():
        steps.append(len(chat.batch.rows))
        if len(steps) == 3:
            raise RuntimeError("decode step broke")
        real_step()

    chat.batch.step = failing_third_step
    answered = []

    async def episode():  # a 1-token call answered at step 1, then a call admitted at step 2
        answered.append(await chat("solver", _ask("short"), max_tokens=1))
        return await chat("verifier", _ask("next"), max_tokens=4)

    async def rollout():
        return await asyncio.wait_for(
            asyncio.gather(episode(), chat("solver", _ask("long"), max_tokens=8), return_exceptions=True), 60
        )

    outcomes = asyncio.run(rollout())
    assert steps == [2, 2, 2]
    assert [str(o) for o in outcomes] == ["decode step broke"] * 2 and len(answered[0].response_ids) == 1
    assert chat.batch.rows == []
    chat.batch.step = real_step
    [reply] = asyncio.run(_long_episode(chat, 4))
    assert len(reply.response_ids) == 4


def test_a_failing_admission_fails_only_the_newcomer(tiny_model, tiny_tokenizer):
    chat = PolicyChat(tiny_model, tiny_tokenizer, defaults=Sampling(**GREEDY), scheduler="continuous")
    long_prompt = _ask("x" * 200)

    async def late_long_prompt():
        await chat("solver", _ask("hi"), max_tokens=1)
        chat.batch.limit = 60  # the next prompt no longer fits; the running row's budget was set at admission
        return await chat("solver", long_prompt, max_tokens=2)

    async def rollout():
        return await asyncio.gather(late_long_prompt(), _long_episode(chat, 6), return_exceptions=True)

    failed, [running] = asyncio.run(rollout())
    assert isinstance(failed, PromptTooLongError) and "max_model_len" in str(failed)
    assert len(running.response_ids) == 6
    assert list(chat.batch.step_sizes) == [2] + [1] * 5


def test_scheduler_settings_are_validated(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="scheduler must be one of continuous, static, got 'dynamic'"):
        PolicyChat(tiny_model, tiny_tokenizer, scheduler="dynamic")
    with pytest.raises(ValueError, match="use 'static' with a generator"):
        PolicyChat(None, tiny_tokenizer, generator=lambda prompts, settings: [], scheduler="continuous")
    with pytest.raises(
        ConfigError,
        match="config: rollout.scheduler: 'dynamic' is not a valid choice; choose one of continuous, static",
    ):
        from_dict(TrainConfig, {"rollout": {"scheduler": "dynamic"}})
    assert RolloutConfig().scheduler == "continuous"


@pytest.mark.parametrize("scheduler", ["continuous", "static"])
def test_engine_builds_the_configured_scheduler(toy_config, tmp_path, scheduler):
    from mara_bench.trainer.run.engine import Trainer

    config = dataclasses.replace(
        toy_config, rollout=dataclasses.replace(toy_config.rollout, scheduler=scheduler)
    )
    chat = Trainer(config, tmp_path).rollout.chat
    assert chat.scheduler == scheduler and (chat.batch is not None) == (scheduler == "continuous")


def test_a_cancelled_call_leaves_the_batch_at_the_next_step(tiny_model, tiny_tokenizer):
    chat = PolicyChat(
        tiny_model, tiny_tokenizer, defaults=Sampling(**GREEDY, max_tokens=8), scheduler="continuous"
    )

    async def rollout():
        doomed = asyncio.create_task(chat("solver", _ask("doomed")))
        kept = asyncio.create_task(chat("solver", _ask("kept")))
        while len(chat.batch.step_sizes) < 2:  # the scheduler yields between steps, so this runs after step 2
            await asyncio.sleep(0)
        doomed.cancel()
        return await kept, await asyncio.gather(doomed, return_exceptions=True)

    kept, [cancelled] = asyncio.run(rollout())
    assert isinstance(cancelled, asyncio.CancelledError) and len(kept.response_ids) == 8
    assert list(chat.batch.step_sizes) == [2, 2] + [1] * 6
