"""A scripted provider for MATPO's two roles (``rolekey/planner-trained``, ``rolekey/worker-base``, …).

The key file named by ``MARA_TEST_ROLE_KEY`` maps each question to ``{"gold": ..., "i": index}``. A planner first
delegates one subtask, then boxes its answer: ``trained`` is right unless ``i % 3 == 2``, ``base`` only when
``i % 3 == 0``, whatever the worker said. A worker finishes at once; its summary names the gold (``trained``) or
not (``base``). So the planner's variant decides the score and the worker's does not. Importing registers it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from mara_bench.harness.testing import scripted_output
from tests.leaderboards.named_script import ScriptedByName

KEY_VARIABLE = "MARA_TEST_ROLE_KEY"
DELEGATE = (
    "<use_mcp_tool><server_name>worker</server_name><tool_name>search_and_browse</tool_name>"
    '<arguments>{"subtask": "find the answer"}</arguments></use_mcp_tool>'
)


class RoleKeyModel(ScriptedByName):
    def configure(self, model_name: str) -> None:
        self.role, self.variant = model_name.split("-", 1)
        self.key: dict[str, dict] = json.loads(Path(os.environ[KEY_VARIABLE]).read_text())

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        text = "\n".join(m.text for m in input if m.role == "user")
        (entry,) = [entry for question, entry in self.key.items() if question in text]
        users = sum(m.role == "user" for m in input)
        if self.role == "planner":
            if users == 1:
                return scripted_output(DELEGATE)
            right = entry["i"] % 3 != 2 if self.variant == "trained" else entry["i"] % 3 == 0
            return scripted_output(f"\\boxed{{{entry['gold'] if right else 'no idea'}}}")
        if users == 1:
            return scripted_output("Nothing to look up.")
        return scripted_output(
            f"The answer is {entry['gold']}." if self.variant == "trained" else "Not found."
        )


@modelapi(name="rolekey")
def rolekey():
    return RoleKeyModel
