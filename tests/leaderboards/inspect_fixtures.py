"""A tiny arithmetic task and a deterministic model provider (``lbmock/…``) for leaderboard tests.

Loaded by suites as ``tests/leaderboards/inspect_fixtures.py@arith``; importing it registers the provider, so a
suite can name ``lbmock/<anything>`` with ``model_args``:

- ``wrong_every`` (int, 0 = never): questions ``i`` with ``(i + offset) % wrong_every == 0`` get a wrong answer;
- ``offset`` (int): shifts which questions are wrong (a "different seed");
- ``wrong_text`` (str): the wrong answer's text (default: the right sum plus one);
- ``fail_until`` (path): every call raises until that file exists (a run that fails tonight and is resumed).

With ``system="vc"`` the task answers twice, like the V-C system: the evaluated model's first answer is stored as
``answer.solver``; the ``corrector`` role (default: the same model) then answers again and that is ``answer.final``.
Both are scored, under the score names ``final`` and ``solver``.
"""

from __future__ import annotations

import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    get_model,
    modelapi,
)
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolChoice, ToolInfo

from mara_bench.judges.response import response_to_judge, store_key

QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


class ArithModel(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        wrong_every: int = 0,
        offset: int = 0,
        wrong_text: str | None = None,
        fail_until: str | None = None,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        self.wrong_every, self.offset, self.wrong_text = int(wrong_every), int(offset), wrong_text
        self.fail_until = Path(fail_until) if fail_until else None

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        if self.fail_until is not None and not self.fail_until.exists():
            raise RuntimeError(f"lbmock: failing until {self.fail_until} exists")
        first, second = (int(g) for g in QUESTION.search(input[0].text).groups())
        wrong = self.wrong_every and (first + self.offset) % self.wrong_every == 0
        text = (self.wrong_text or str(first + second + 1)) if wrong else str(first + second)
        output = ModelOutput.from_content(model=self.model_name, content=text)
        output.usage = ModelUsage(input_tokens=5, output_tokens=2, total_tokens=7)
        return output


@modelapi(name="lbmock")
def lbmock():
    return ArithModel


@solver
def answer_twice(system: str):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        first = await get_model().generate(state.messages)
        state.store.set(store_key("solver"), first.completion)
        final = first
        if system == "vc":
            corrector = get_model(role="corrector", default=get_model())
            final = await corrector.generate(
                state.messages + [ChatMessageUser(content="Check and answer again.")]
            )
        state.store.set(store_key("final"), final.completion)
        state.output = final
        return state

    return solve


def exact_answer(which: str):
    @scorer(metrics=[accuracy(), stderr()], name=which)
    def exact():
        async def score(state: TaskState, target: Target) -> Score:
            answer = response_to_judge(state, which)
            return Score(value=CORRECT if answer == target.text else INCORRECT, answer=answer)

        return score

    return exact()


@task
def arith(n: int = 40, system: str = "direct", protocol: str = "quick", start: int = 0) -> Task:
    samples = [
        Sample(id=f"q{i}", input=f"What is {i} + {i % 7}?", target=str(i + i % 7))
        for i in range(start, start + n)
    ]
    return Task(
        dataset=samples,
        solver=answer_twice(system),
        scorer=[exact_answer("final"), exact_answer("solver")],
        metadata={"protocol_note": protocol},
    )
