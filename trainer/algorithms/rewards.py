"""Training rewards from the harness's judges: the same scoring code that evaluates a checkpoint rewards it.

* Rule judges (``math``, ``lexical``) reward through their pure cores (``mara_bench.judges.cores``), the functions the
  Inspect scorers call: ``math`` gives 1/0 for an equivalent final answer; ``lexical`` gives one of its values
  (``em`` by default, ``acc`` or ``f1``; an item M-ASK's variant leaves out of F1 falls back to its ``em``).
* LLM judges (``hle`` -- MARS's reward, arXiv:2510.04935 C.3 -- and ``simpleqa`` -- MATPO's, arXiv:2510.04678) ask a grader
  with the judge's own prompt and strict parser (``mara_bench.judges.hle`` / ``mara_bench.judges.simpleqa`` through
  ``mara_bench.judges.grader.ask_grader``, as their scorers do). The grader is any Inspect model string (``openai/gpt-4o``,
  ``mockllm/model``, ``vllm/...``), or an OpenAI-compatible endpoint (``openai-api/<name>/<model>`` with
  ``base_url``). Each judgement is awaited as soon as its episode ends, so judging overlaps the other rollouts; it
  runs under a timeout, is retried on timeouts and failed calls (tenacity, exponential back-off), and is cached by
  (question, gold, response). A judgement that still fails is *unscored*: ``None``, never a reward of 0 -- the
  engine drops that trajectory from its group and counts it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.scorer import Target

from mara_bench.judges import cores
from mara_bench.trainer.task_config import GraderConfig

RULE_JUDGES = ("math", "lexical")
LLM_JUDGES = ("hle", "simpleqa")
LEXICAL_METRICS = ("em", "acc", "f1")


def gold_text(answer: str | Sequence[str]) -> str:
    """An item's gold answer as the evaluation scorers read it (Inspect's ``Target.text``): a toy task's answer
    string as it is, a benchmark item's list of golds joined (one gold: that gold)."""
    return Target(answer).text


def rule_reward(judge: str, response: str, golds: str | Sequence[str], options: dict[str, Any]) -> float:
    """The reward of ``response`` under a rule judge (``options``: ``variant`` and ``metric`` for lexical)."""
    if judge == "math":
        gold = golds if isinstance(golds, str) else golds[0]
        return float(cores.math_verdict(response, gold)[1])
    if judge == "lexical":
        values = cores.lexical_values(response, golds, options.get("variant", "flashrag"))[1]
        value = values[options.get("metric", "em")]
        return float(values["em"] if value is None else value)
    raise ValueError(f"{judge!r} is not a rule judge; rule judges: {', '.join(RULE_JUDGES)}")


def check_judge_options(judge: str, options: dict[str, Any]) -> None:
    """Raise a ``ValueError`` naming ``task.judge_options`` and the fix for options ``judge`` does not take."""
    allowed = {"lexical": {"variant", "metric"}}.get(judge, set())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(
            f"task.judge_options {unknown} do not apply to judge {judge!r}; valid: {sorted(allowed) or 'none'}"
        )
    if judge == "lexical":
        from mara_bench.judges.lexical import check_variant

        check_variant(options.get("variant", "flashrag"))
        if options.get("metric", "em") not in LEXICAL_METRICS:
            raise ValueError(
                f"task.judge_options.metric must be one of {', '.join(LEXICAL_METRICS)}; got {options['metric']!r}"
            )


class UnscoredJudgement(Exception):
    """A grader call failed or timed out (retried by tenacity)."""


@dataclass
class LLMJudgeReward:
    """1/0 rewards from an LLM judge, judged asynchronously with a timeout, retries and a cache."""

    judge: str
    settings: GraderConfig
    cache: dict[tuple[str, str, str], float] = field(default_factory=dict)
    _models: dict[int, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.judge not in LLM_JUDGES:
            raise ValueError(f"{self.judge!r} is not an LLM judge; LLM judges: {', '.join(LLM_JUDGES)}")

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

    def _request(self, question: str, gold: str, response: str) -> tuple[str, Any, Any]:
        """(prompt, parser, response schema) exactly as the judge's scorer builds them."""
        from mara_bench.judges import hle, simpleqa

        if self.judge == "hle":
            return hle.judge_prompt(question, response, gold), hle.parse_verdict, hle.RESPONSE_SCHEMA
        return simpleqa.grader_prompt(question, gold, response), simpleqa.parse_grade, None

    def verdict_reward(self, verdict: Any) -> float:
        """1.0 for a correct verdict (HLE ``correct: yes``; SimpleQA ``CORRECT``), else 0.0."""
        return float(verdict.correct if self.judge == "hle" else verdict == "CORRECT")

    async def _ask_once(self, question: str, gold: str, response: str) -> float | None:
        from mara_bench.judges.grader import ask_grader

        prompt, parse, schema = self._request(question, gold, response)
        outcome = await asyncio.wait_for(
            ask_grader(
                self.judge,
                prompt,
                parse,
                schema=schema,
                attempts=self.settings.attempts,
                cache=False,
                model=self._model(),
            ),
            self.settings.timeout,
        )
        if outcome.verdict is None and outcome.failure and outcome.failure.startswith("grader call failed"):
            raise UnscoredJudgement(outcome.failure)
        return None if outcome.verdict is None else self.verdict_reward(outcome.verdict)

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
            print(f"unscored judgement ({self.judge}): {type(error).__name__}: {error}")
            return None
        if reward is not None:
            self.cache[key] = reward
        return reward

    def cached(self, question: str, gold: str, response: str) -> float:
        """The reward already judged for this response (``KeyError`` when it was not judged)."""
        return self.cache[(question, gold, response)]
