"""A scripted grader provider (``verdictkey/accept=A+B``): says "yes" when the prompt holds one of the accepted
tokens (``A``, ``B``), else "no". Importing this module registers it; a suite binds it as ``grader`` or
``second_grader`` so that the real LLM judges run on verdicts the test controls."""

from __future__ import annotations

from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from mara_bench.harness.testing import scripted_output
from tests.leaderboards.named_script import ScriptedByName


class VerdictKeyModel(ScriptedByName):
    def configure(self, model_name: str) -> None:
        rule, _, tokens = model_name.partition("=")
        if rule != "accept" or not tokens:
            raise ValueError(
                f"verdictkey: name the accepted tokens, e.g. verdictkey/accept=A+B, not {model_name!r}"
            )
        self.accepted = tokens.split("+")

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        prompt = input[-1].text
        return scripted_output("yes" if any(token in prompt for token in self.accepted) else "no")


@modelapi(name="verdictkey")
def verdictkey():
    return VerdictKeyModel
