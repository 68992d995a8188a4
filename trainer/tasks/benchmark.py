"""Train on what we score: a harness benchmark as the training task (``task.benchmark`` in a recipe).

* Items come through the harness loader (``mara_bench.harness.datasets.load_benchmark``: ``data`` file or folder, else
  ``MARA_DATA_DIR``, else Hugging Face at the pinned revision), ``split: train`` reading the source's training
  split where the benchmark's declaration names one (the papers' training sets; ``tasks/*.py``). A relative ``data``
  path resolves against the current working directory, as ``-T data=`` does.
* Each item's run gets its question and options exactly as the evaluation task gives them
  (``mara_bench.harness.systems.sample_question`` and ``sample_options``: the question in the benchmark's user template,
  FlashRAG's ``Question: {question}`` for the QA sets, and the answer-format instruction as ``system_prompt`` for
  systems that take one).
* The reward is the one the judge registers (``mara_bench.judges.registry.judge_reward``): a rule judge's pure core,
  or an LLM judge asked through the judge's prompt and parser (``mara_bench.trainer.algorithms.rewards``), judged as
  each episode ends (``grade``); an unscored judgement drops the episode from its group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspect_ai.scorer import Target

from mara_bench.core.episodes import Episode
from mara_bench.harness.datasets import load_benchmark
from mara_bench.harness.systems import get_system, sample_options, sample_question
from mara_bench.judges.registry import judge_reward, rewarding_judges
from mara_bench.judges.rewards import GraderReward, RuleReward
from mara_bench.trainer.algorithms.rewards import LLMJudgeReward
from mara_bench.trainer.task_config import GraderConfig


@dataclass
class BenchmarkTask:
    """A benchmark's items with its judge as the reward (see the module docstring)."""

    items: list[dict[str, Any]]
    """``{"id", "question", "answer", "metadata"}`` per sample: input text, target (one gold or a list)."""
    judge: str
    rewarder: RuleReward | LLMJudgeReward
    """The judge's reward: its pure core (a rule judge), or its grader asked with a timeout, retries and a cache
    (an LLM judge)."""
    judge_options: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    """Per benchmark, what was loaded (source, revision or sha256, row counts, id hash), as an evaluation log
    records it."""

    def run_input(
        self, item: dict[str, Any], system: str, options: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """The user message and options of one run of ``system`` on this item given the recipe's ``options``,
        built by the evaluation task's own functions: the question in the benchmark's user template, and the
        answer-format instruction as ``system_prompt`` unless the recipe sets one."""
        spec = get_system(system)
        metadata = item["metadata"]
        return (
            sample_question(spec, options, metadata, item["question"]),
            sample_options(spec, options, metadata),
        )

    async def grade(self, item: dict[str, Any], episode: Episode) -> float | None:
        """Judge the episode's final answer as soon as it ends; ``None`` when the judgement is unscored."""
        if not isinstance(self.rewarder, LLMJudgeReward):
            return self.reward(item, episode)
        target = Target(item["answer"])
        return await self.rewarder(item["question"], target.text, episode.final_answer or "")

    def reward(self, item: dict[str, Any], episode: Episode) -> float:
        """The judge's reward of the episode's final answer (an LLM judge's verdict from ``grade``)."""
        response = episode.final_answer or ""
        target = Target(item["answer"])
        if isinstance(self.rewarder, LLMJudgeReward):
            return self.rewarder.cached(item["question"], target.text, response)
        return self.rewarder.score(response, target.target, self.judge_options)


def item_from_sample(sample: Any, prefix: str = "") -> dict[str, Any]:
    """A loaded Inspect sample as a training item (its id prefixed, to stay unique in a mix of benchmarks)."""
    if not isinstance(sample.input, str):
        raise ValueError(
            f"sample {sample.id}: training needs a text question, got a {type(sample.input).__name__}"
        )
    return {
        "id": f"{prefix}{sample.id}",
        "question": sample.input,
        "answer": sample.target,
        "metadata": dict(sample.metadata or {}),
    }


def benchmark_task(
    benchmark: str | list[str],
    *,
    judge: str | None = None,
    data: str | None = None,
    split: str | None = "train",
    limit: int | dict[str, int] | None = None,
    judge_options: dict[str, Any] | None = None,
    grader: GraderConfig | None = None,
) -> BenchmarkTask:
    """The training task of ``benchmark``'s ``split`` (several benchmarks: their items one after the other, ids
    prefixed ``<benchmark>/``; ``limit`` per benchmark when a mapping) judged by ``judge`` (default: the benchmarks' own, which must then agree)."""
    from mara_bench.catalog import get_benchmark

    names = [benchmark] if isinstance(benchmark, str) else list(benchmark)
    defaults = sorted({get_benchmark(b).judge for b in names})
    if judge is None and len(defaults) > 1:
        raise ValueError(f"task.benchmark {names} are judged by {defaults} by default; set task.judge to one")
    name = judge or defaults[0]
    rewarding = rewarding_judges()
    reward = judge_reward(name) if name in rewarding else None
    if reward is None:
        raise ValueError(f"task.judge {name!r} cannot reward training; use one of {', '.join(rewarding)}")
    if isinstance(reward, GraderReward) and grader is None:
        raise ValueError(
            f"task.judge {name!r} asks an LLM grader: set task.grader.model (an Inspect model string, or "
            "openai-api/<name>/<model> with task.grader.base_url for an OpenAI-compatible server)"
        )
    reward.check_options(name, judge_options or {}, "task.judge_options")
    items, provenance = [], {}
    for one in names:
        own_limit = limit.get(one) if isinstance(limit, dict) else limit
        loaded = load_benchmark(one, data=data, limit=own_limit, split=split)
        prefix = f"{one}/" if len(names) > 1 else ""
        items += [item_from_sample(sample, prefix) for sample in loaded.dataset]
        provenance[one] = loaded.provenance
    rewarder = (
        LLMJudgeReward(name, reward, grader)
        if isinstance(reward, GraderReward) and grader is not None
        else reward
    )
    return BenchmarkTask(items, name, rewarder, dict(judge_options or {}), provenance)
