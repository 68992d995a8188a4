"""The ``adder/<skill>`` model: a scripted Solver of "What is a + b?" questions, right a fixed share of the time.

MarsRL's cross-solver table (Table 3) pairs a trained Verifier/Corrector with Solvers it never trained on. For the
two-digit-sum task of the SmolLM2 recipe, ``--model-role solver=adder/0.5`` is such a Solver with a known skill:
it writes ``The answer is N.``, N the sum for a share ``skill`` of the questions (which ones is fixed by a hash of
the question, so every run and epoch agrees) and otherwise off by 1 to 3. Any prompt without "a + b" gets ``I do
not know.``
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

SUM = re.compile(r"(\d+)\s*\+\s*(\d+)")


def scripted_answer(prompt: str, skill: float) -> str:
    """The reply to ``prompt``: its first sum, right for a share ``skill`` of prompts, else off by 1 to 3."""
    found = SUM.search(prompt)
    if found is None:
        return "I do not know."
    total = int(found.group(1)) + int(found.group(2))
    draw = int.from_bytes(hashlib.sha256(prompt.encode("utf-8")).digest()[:8], "big")
    if (draw % 10_000) / 10_000 >= skill:
        offset = 1 + (draw >> 20) % 3
        total += offset if (draw >> 30) % 2 or total - offset < 0 else -offset
    return f"The answer is {total}."


class Adder(ModelAPI):
    """``adder/<skill>``: ``skill`` in [0, 1]."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        try:
            self.skill = float(model_name)
        except ValueError:
            self.skill = -1.0
        if not 0.0 <= self.skill <= 1.0:
            raise ValueError(f"adder/{model_name}: give the share of right answers in [0, 1], e.g. adder/0.5")

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        prompt = input[-1].text if input else ""
        text = scripted_answer(prompt, self.skill)
        output = ModelOutput.from_content(model=f"adder/{self.model_name}", content=text)
        output.usage = ModelUsage(input_tokens=len(prompt.split()), output_tokens=len(text.split()))
        output.usage.total_tokens = output.usage.input_tokens + output.usage.output_tokens
        return output


@modelapi(name="adder")
def adder() -> type[ModelAPI]:
    return Adder
