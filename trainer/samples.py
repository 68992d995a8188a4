"""Training samples, and how an Episode's model calls become them.

A sample is one token sequence the policy is trained on: the prompt (never trained), then the response, where
``loss_mask`` marks the tokens the policy itself produced. A multi-turn call (its messages already hold earlier
assistant turns and tool results) becomes ONE sample whose response covers the whole conversation after the
first prompt: assistant tokens are in the mask, tool / user / other-agent tokens and chat-template scaffolding
are out. When every call of the conversation carries its token ids (the trainer's policy chat: token-in/token-out,
``mara_bench.trainer.token_turns``), the sample is those ids exactly -- each call's reply as generated, then the
tokens its next call's prompt added -- so what is trained is exactly what the model saw and produced, and
every generated token keeps the engine's logprob (``rollout_logprobs``). Otherwise the ids are a re-render of
the whole conversation with the tokenizer's chat template (up to the final end-of-turn token) by the renderer
generation uses (``mara_bench.harness.chat_template.render_prompt``).
"""

from __future__ import annotations

import math

from mara_bench.core.episodes import Episode, Message, ModelCall
from mara_bench.core.samples import Sample
from mara_bench.harness.chat_template import render_prompt


def _extension(
    tokenizer, before: list[int], messages: list[Message], *, add_generation_prompt: bool = False
) -> list[int]:
    """The tokens that rendering ``messages`` adds after ``before``; the template must be prefix-stable."""
    after = render_prompt(tokenizer, messages, add_generation_prompt=add_generation_prompt)
    if after[: len(before)] != before:
        raise ValueError(
            "the chat template is not prefix-stable (rendering one more message changed earlier tokens); "
            "multi-turn samples need a template that renders each turn independently"
        )
    return after[len(before) :]


def _assistant_mask(tokenizer, body: list[int]) -> list[int]:
    """Mask 1 for an assistant turn's tokens up to and including its end-of-turn token, 0 for what follows."""
    eos = tokenizer.eos_token_id
    last_eos = max((i for i, token in enumerate(body) if token == eos), default=len(body) - 1)
    return [1] * (last_eos + 1) + [0] * (len(body) - last_eos - 1)


def _reply_ids(tokenizer, call: ModelCall) -> list[int]:
    """The reply's token ids as generated, else its text tokenized and closed with the end-of-turn token."""
    if call.reply.response_ids is not None:
        return list(call.reply.response_ids)
    ids = tokenizer(call.reply.text, add_special_tokens=False)["input_ids"]
    return list(ids) + ([tokenizer.eos_token_id] if call.reply.finish_reason != "length" else [])


def sample_from_call(tokenizer, call: ModelCall, *, group_key: str = "", reward: float = 0.0) -> Sample:
    """One sample for ``call``: its messages' earlier assistant turns are trained on, everything else is not."""
    messages = call.messages
    first_assistant = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), len(messages))
    if first_assistant == len(messages) and call.reply.prompt_ids is not None:
        prompt_ids = list(call.reply.prompt_ids)  # what the policy was given: the same render, already done
    else:
        prompt_ids = render_prompt(tokenizer, messages[:first_assistant]) if first_assistant else []
    response_ids: list[int] = []
    loss_mask: list[int] = []
    rendered = prompt_ids
    for index in range(first_assistant, len(messages)):
        body = _extension(tokenizer, rendered, messages[: index + 1])
        is_model_turn = messages[index]["role"] == "assistant"
        mask = _assistant_mask(tokenizer, body) if is_model_turn else [0] * len(body)
        if index + 1 < len(messages) and messages[index + 1]["role"] == "assistant":
            header = _extension(tokenizer, rendered + body, messages[: index + 1], add_generation_prompt=True)
            body, mask = body + header, mask + [0] * len(header)
        response_ids += body
        loss_mask += mask
        rendered = rendered + body
    if first_assistant < len(messages) and messages[-1]["role"] != "assistant":
        header = _extension(tokenizer, rendered, messages, add_generation_prompt=True)
        response_ids += header
        loss_mask += [0] * len(header)
    reply = _reply_ids(tokenizer, call)
    response_ids += reply
    loss_mask += [1] * len(reply)
    old_logprobs = None
    if call.reply.logprobs is not None and first_assistant == len(messages):
        old_logprobs = list(call.reply.logprobs)
    return Sample(
        prompt_ids=prompt_ids,
        response_ids=response_ids,
        loss_mask=loss_mask,
        old_logprobs=old_logprobs,
        rollout_logprobs=None if old_logprobs is None else list(old_logprobs),
        role=call.role,
        group_key=group_key,
        reward=reward,
    )


def _has_ids(call: ModelCall) -> bool:
    reply = call.reply
    return reply.prompt_ids is not None and reply.response_ids is not None and reply.logprobs is not None


def sample_from_turns(chain: list[ModelCall], *, group_key: str = "", reward: float = 0.0) -> Sample | None:
    """One sample from a conversation's calls in order (each continuing the one before), built from their token
    ids alone; ``None`` when a call lacks ids or its prompt does not start with the conversation so far."""
    if not all(map(_has_ids, chain)):
        return None
    prompt_ids = list(chain[0].reply.prompt_ids)
    response_ids: list[int] = []
    loss_mask: list[int] = []
    logprobs: list[float] = []
    for index, call in enumerate(chain):
        if index:
            seen = prompt_ids + response_ids
            if call.reply.prompt_ids[: len(seen)] != seen:
                return None
            added = call.reply.prompt_ids[len(seen) :]
            response_ids += added
            loss_mask += [0] * len(added)
            logprobs += [math.nan] * len(added)
        response_ids += call.reply.response_ids
        loss_mask += [1] * len(call.reply.response_ids)
        logprobs += call.reply.logprobs
    last = chain[-1]
    return Sample(
        prompt_ids=prompt_ids,
        response_ids=response_ids,
        loss_mask=loss_mask,
        old_logprobs=list(logprobs) if len(chain) == 1 else None,
        rollout_logprobs=logprobs,
        role=last.role,
        group_key=group_key,
        reward=reward,
    )


def conversation(call: ModelCall, calls: list[ModelCall]) -> list[ModelCall]:
    """``call`` and the earlier calls it continues, first to last (each the longest one the next continues)."""
    chain = [call]
    while True:
        earlier = [c for c in calls if c is not chain[0] and _continues(c, chain[0])]
        if not earlier:
            return chain
        chain.insert(0, max(earlier, key=lambda c: len(c.messages)))


def _continues(earlier: ModelCall, later: ModelCall) -> bool:
    """True when ``later``'s conversation starts with ``earlier``'s messages followed by its reply."""
    head = [*earlier.messages, {"role": "assistant", "content": earlier.reply.text}]
    return later.role == earlier.role and later.messages[: len(head)] == head


def final_calls(episode: Episode) -> list[ModelCall]:
    """The calls that are not continued by a later call of the same role (each one is a whole conversation)."""
    calls = episode.calls
    return [c for i, c in enumerate(calls) if not any(_continues(c, later) for later in calls[i + 1 :])]


def samples_from_episode(
    episode: Episode, tokenizer, *, group_key: str = "", reward: float = 0.0, roles: set[str] | None = None
) -> list[Sample]:
    """Samples for an episode's calls (``roles`` filters them), multi-turn chains merged into one sample each.

    The sample's ``parent`` is the index (in the returned list) of the sample holding the call's parent call.
    """
    calls = [c for c in final_calls(episode) if roles is None or c.role in roles]
    position = {call.id: index for index, call in enumerate(calls)}
    samples = []
    for call in calls:
        sample = sample_from_turns(conversation(call, episode.calls), group_key=group_key, reward=reward)
        if sample is None:
            sample = sample_from_call(tokenizer, call, group_key=group_key, reward=reward)
        sample.parent = position.get(call.parent) if call.parent is not None else None
        samples.append(sample)
    return samples
