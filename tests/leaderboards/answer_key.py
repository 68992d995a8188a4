"""A scripted model provider (``answerkey/…``) that answers benchmark questions from an answer key file.

Importing this module registers the provider; a suite checkpoint names ``answerkey/<anything>`` with
``model_args: {key: <path to a JSON object {question text: reply}>}``. Each call replies with the reply of the key
question contained in the prompt's last user message (the real task's template wraps the question), so a suite runs
the real task files, systems and judges with answers the test controls; an unknown question is a test bug and raises.
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from mara_bench.harness.testing import scripted_output


class AnswerKeyModel(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        key: str = "",
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.replies: dict[str, str] = json.loads(Path(key).read_text())

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        prompt = next(m.text for m in reversed(input) if m.role == "user")
        replies = [reply for question, reply in self.replies.items() if question in prompt]
        if len(replies) != 1:
            raise RuntimeError(f"answerkey: {len(replies)} key questions match the prompt {prompt[:200]!r}")
        return scripted_output(replies[0], model=self.model_name)


@modelapi(name="answerkey")
def answerkey():
    return AnswerKeyModel
