"""Token-in/token-out for multi-turn rollouts: a conversation continues from the token ids the engine produced.

Rendering a conversation's text again would re-tokenise the model's earlier replies, and the ids of a text are
not always the ids that generated it (``"ab"`` sampled as ``"a"`` + ``"b"`` re-tokenises as one token). The
policy would then be trained on -- and continue from -- sequences it never produced. ``TurnIds`` remembers, for
each finished call, the exact ids of its conversation (prompt + reply); a later call whose messages continue it
(the same messages, the reply as an assistant message, then new turns) is given those ids followed by only the
template's tokens for the new turns (what rendering adds after the earlier conversation). Both backends get
their prompts here, through ``mara_bench.trainer.learner.policy.PolicyChat``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from mara_bench.core.episodes import Message

Render = Callable[..., list[int]]
"""``render(messages, add_generation_prompt=...)``: the chat template's token ids for ``messages``."""

CAPACITY = 4096
"""Conversations remembered; full, it starts over (a later turn then falls back to rendering its text)."""


def _key(messages: list[Message]) -> str:
    return json.dumps(messages, sort_keys=True)


class TurnIds:
    """The engine's token ids of finished conversations, keyed by their messages (reply included)."""

    def __init__(self, eos_token_id: int | None):
        self.eos = eos_token_id
        self._ids: dict[str, list[int]] = {}

    def record(self, messages: list[Message], reply_text: str, ids: list[int]) -> None:
        """Remember ``ids`` (prompt + response as generated) as the conversation ``messages`` + the reply."""
        if len(self._ids) >= CAPACITY:
            self._ids.clear()
        self._ids[_key([*messages, {"role": "assistant", "content": reply_text}])] = list(ids)

    def prompt(self, messages: list[Message], render: Render) -> list[int]:
        """The prompt ids for ``messages``: the longest remembered conversation they continue, as generated,
        then the rendered tokens of the turns after it; ``render(messages)`` when they continue none."""
        for end in range(len(messages) - 1, 0, -1):
            if messages[end - 1]["role"] != "assistant":
                continue
            earlier = self._ids.get(_key(messages[:end]))
            if earlier is None:
                continue
            rendered_earlier = render(messages[:end], add_generation_prompt=False)
            rendered = render(messages, add_generation_prompt=True)
            if rendered[: len(rendered_earlier)] != rendered_earlier:
                break  # not prefix-stable: the template rewrote earlier turns, so the text is all there is
            return earlier + self._turn_close(earlier, rendered_earlier) + rendered[len(rendered_earlier) :]
        return render(messages, add_generation_prompt=True)

    def _turn_close(self, generated: list[int], rendered: list[int]) -> list[int]:
        """What the template puts after the reply's last token: the scaffolding after its end-of-turn token
        (``"\\n"`` in ChatML), with the end-of-turn token itself when the reply was cut before it."""
        last_eos = max((i for i, token in enumerate(rendered) if token == self.eos), default=None)
        if last_eos is None:
            return []
        closed = bool(generated) and generated[-1] == self.eos
        return rendered[last_eos + 1 :] if closed else rendered[last_eos:]
