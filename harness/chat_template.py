"""The one chat-template renderer: messages to prompt token ids, for generation and for training samples alike.

The ``local/`` provider and the trainer's policy render a prompt with ``render_prompt`` before generating; the
trainer renders the same conversations again with it when it turns calls into samples
(``mara_bench.trainer.samples``), so the token ids trained on are the ids the model was given by construction.
No torch here: it only drives the tokenizer's ``apply_chat_template``.
"""

from __future__ import annotations

from typing import Any

PROBE_TOOL = "mara_probe_tool"


def render_prompt(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool = True,
    tools: list[dict[str, Any]] | None = None,
    chat_template: str | None = None,
    **template_kwargs: Any,
) -> list[int]:
    """Token ids of ``messages`` rendered with the chat template (the tokenizer's own unless one is given),
    ending with the assistant's turn header unless ``add_generation_prompt`` is false."""
    if chat_template is None and not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', '')!r} has no chat template; give one "
            "(-M chat_template=FILE, or chat_template: in checkpoints.yaml)"
        )
    encoded = tokenizer.apply_chat_template(
        messages,
        tools=tools or None,
        chat_template=chat_template,
        add_generation_prompt=add_generation_prompt,
        tokenize=True,
        return_dict=True,
        **template_kwargs,
    )
    return list(encoded["input_ids"])


def template_renders_tools(tokenizer: Any, **template_kwargs: Any) -> bool:
    """Whether the tokenizer's chat template writes the ``tools`` it is given into the prompt."""
    probe = {"type": "function", "function": {"name": PROBE_TOOL, "description": "", "parameters": {}}}
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}],
        tools=[probe],
        add_generation_prompt=True,
        tokenize=False,
        **template_kwargs,
    )
    return PROBE_TOOL in text
