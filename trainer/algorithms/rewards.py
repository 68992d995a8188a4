"""Training rewards from the harness's judges: the same scoring code that evaluates a checkpoint rewards it.

Each judge that can reward training offers its reward where it is registered (``mara_bench.judges.registry``,
``JudgeSpec.reward``; ``mara_bench.judges.rewards``): a rule judge (``math``, ``lexical``) its pure core, the function its
Inspect scorer calls, which the task calls directly; an LLM judge (``hle`` -- MARS's reward, arXiv:2510.04935 C.3 --
and ``simpleqa`` -- MATPO's, arXiv:2510.04678) the grader request its scorer builds (prompt, strict parser, schema)
and its verdict's reward, which ``LLMJudgeReward`` asks through ``mara_bench.judges.grader.ask_grader``. The grader
is any Inspect model string (``openai/gpt-4o``, ``mockllm/model``, ``vllm/...``), or an OpenAI-compatible endpoint
(``openai-api/<name>/<model>`` with ``base_url``). Each judgement is awaited as soon as its episode ends, so judging
overlaps the other rollouts; it runs under a timeout, is retried on timeouts and failed calls (tenacity,
exponential back-off), and is cached by (question, gold, response). A judgement that still fails is *unscored*:
``None``, never a reward of 0 -- the engine drops that trajectory from its group and counts it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.scorer import Target

from mara_bench.judges.rewards import GraderReward
from mara_bench.trainer.task_config import GraderConfig

logger = logging.getLogger(__name__)


def gold_text(answer: str | Sequence[str]) -> str:
    """An item's gold answer as the evaluation scorers read it (Inspect's ``Target.text``): a toy task's answer
    string as it is, a benchmark item's list of golds joined (one gold: that gold)."""
    return Target(answer).text


class UnscoredJudgement(Exception):
    """A grader call failed or timed out (retried by tenacity)."""


@dataclass
class LLMJudgeReward:
    """1/0 rewards from an LLM judge (its registered ``GraderReward``), judged asynchronously with a timeout,
    retries and a cache."""

    judge: str
    grader: GraderReward
    settings: GraderConfig
    cache: dict[tuple[str, str, str], float] = field(default_factory=dict)
    _models: dict[int, Any] = field(default_factory=dict, repr=False)

    def _model(self) -> Any:
        """The grader model of the running event loop (each training step runs its own loop; a client is not
        shared across loops)."""
        from inspect_ai.model import get_model

        loop = id(asyncio.get_running_loop())
        if loop not in self._models:
            extra = {
                k: v
                for k, v in (("base_url", self.settings.base_url), ("api_key", self.settings.api_key))
                if v
            }
            self._models = {loop: get_model(self.settings.model, memoize=False, **extra)}
        return self._models[loop]

    async def _ask_once(self, question: str, gold: str, response: str) -> float | None:
        from mara_bench.judges.grader import ask_grader

        request = self.grader.request(question, gold, response)
        outcome = await asyncio.wait_for(
            ask_grader(
                self.judge,
                request.prompt,
                request.parse,
                schema=request.schema,
                attempts=self.settings.attempts,
                cache=False,
                model=self._model(),
            ),
            self.settings.timeout,
        )
        if outcome.verdict is None and outcome.failure and outcome.failure.startswith("grader call failed"):
            raise UnscoredJudgement(outcome.failure)
        return None if outcome.verdict is None else self.grader.reward(outcome.verdict)

    async def __call__(self, question: str, gold: str, response: str) -> float | None:
        """The reward of ``response``, or ``None`` when no verdict could be had (unscored)."""
        from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

        key = (question, gold, response)
        if key in self.cache:
            return self.cache[key]
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.retries),
            wait=wait_exponential(multiplier=0.5, max=8),
            retry=retry_if_exception_type((UnscoredJudgement, TimeoutError)),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    reward = await self._ask_once(question, gold, response)
        except (UnscoredJudgement, TimeoutError) as error:
            logger.warning("unscored judgement (%s): %s: %s", self.judge, type(error).__name__, error)
            return None
        if reward is not None:
            self.cache[key] = reward
        return reward

    def cached(self, question: str, gold: str, response: str) -> float:
        """The reward already judged for this response (``KeyError`` when it was not judged)."""
        return self.cache[(question, gold, response)]
