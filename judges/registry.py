"""The judges by name: build a judge's scorer, tell LLM judges apart, name its headline, check for a grader, and
the training reward a judge offers (``mara_bench.judges.rewards``: a rule judge's pure core, or an LLM judge's
grader request and verdict reward; ``equivalence`` and ``gaia`` offer none).

Task builders call ``require_grader(judge, task_roles, **options)`` inside their ``@task`` function: Inspect binds
``--model-role`` models before it calls task functions, so a missing grader fails there, before any sample runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from inspect_ai.scorer import Scorer

from mara_bench.core.inspect_compat import registry_info, set_registry_info
from mara_bench.core.named import lookup
from mara_bench.judges import cores, hle, simpleqa
from mara_bench.judges.grader import GRADER_ROLE, ensure_grader_bound
from mara_bench.judges.rewards import GraderReward, JudgeReward, RuleReward
from mara_bench.judges.scorers import (
    equivalence_scorer,
    gaia_scorer,
    hle_scorer,
    lexical_scorer,
    math_scorer,
    simpleqa_scorer,
)


@dataclass(frozen=True)
class Headline:
    """The one number a judge is ranked and compared by: ``key`` of each sample's score value (the per-sample
    value that regression tests pair up) and ``metric``, the metric of the scorer that averages that key."""

    key: str
    metric: str


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: its scorer factory, whether (given its options) it asks an LLM grader, its headline, and the
    training reward it offers (``None``: it cannot reward training)."""

    factory: Callable[..., Scorer]
    uses_grader: Callable[[Mapping[str, Any]], bool]
    headline: Callable[[Mapping[str, Any]], Headline]
    reward: JudgeReward | None = None


def _always(_: Mapping[str, Any]) -> bool:
    return True


def _never(_: Mapping[str, Any]) -> bool:
    return False


def _accuracy(_: Mapping[str, Any]) -> Headline:
    """Verdict judges: ``correct`` (unscored counted wrong, the official convention), averaged as ``accuracy``."""
    return Headline(key="correct", metric="accuracy")


def _simpleqa_correct(_: Mapping[str, Any]) -> Headline:
    """SimpleQA's official headline: the CORRECT rate over all items, reported as ``correct``."""
    return Headline(key="correct", metric="correct")


def _lexical(options: Mapping[str, Any]) -> Headline:
    """FlashRAG reports EM; M-ASK (``variant="mask"``) reports F1 (its yes/no items left out of the mean)."""
    key = "f1" if options.get("variant") == "mask" else "em"
    return Headline(key=key, metric=key)


JUDGES: dict[str, JudgeSpec] = {
    "hle": JudgeSpec(hle_scorer, _always, _accuracy, GraderReward(hle.reward_request, hle.verdict_reward)),
    "simpleqa": JudgeSpec(
        simpleqa_scorer,
        _always,
        _simpleqa_correct,
        GraderReward(simpleqa.reward_request, simpleqa.verdict_reward),
    ),
    "equivalence": JudgeSpec(equivalence_scorer, _always, _accuracy),
    "math": JudgeSpec(math_scorer, _never, _accuracy, RuleReward(cores.math_reward)),
    "lexical": JudgeSpec(
        lexical_scorer,
        _never,
        _lexical,
        RuleReward(cores.lexical_reward, frozenset({"variant", "metric"}), cores.check_lexical_options),
    ),
    "gaia": JudgeSpec(gaia_scorer, lambda options: bool(options.get("cascade", False)), _accuracy),
}


def _spec(name: str) -> JudgeSpec:
    return lookup(JUDGES, name, "judge")


def get_judge(name: str, **options: Any) -> Scorer:
    """The scorer of judge ``name`` built with ``options`` (e.g. ``answer="solver"``, ``variant="mask"``).

    A judge of another answer than the final one is named ``<judge>_<answer>`` (``math_solver``), so one log holds
    a column per answer (the V-C system's *solver alone* and *system* columns) under self-explaining names; a judge
    graded by another role than ``grader`` is named ``<judge>_<role>`` (``hle_grader2``, the second judge).
    """
    built = _spec(name).factory(**options)
    suffixes = [options.get("answer", "final"), options.get("grader_role", GRADER_ROLE)]
    suffix = "".join(f"_{part}" for part in suffixes if part not in ("final", GRADER_ROLE))
    if suffix:
        info = registry_info(built)
        set_registry_info(built, info.model_copy(update={"name": f"{info.name}{suffix}"}))
    return built


def is_llm_judge(name: str, **options: Any) -> bool:
    """Whether judge ``name`` with ``options`` asks an LLM grader (e.g. ``gaia`` only with ``cascade=True``)."""
    return _spec(name).uses_grader(options)


def headline(name: str, **options: Any) -> Headline:
    """The headline of judge ``name`` built with ``options``: which score key and metric rank and compare runs."""
    return _spec(name).headline(options)


def require_grader(name: str, task_roles: Mapping[str, Any] | None = None, **options: Any) -> None:
    """Raise ``GraderMissingError`` if judge ``name`` needs a grader and neither the eval nor ``task_roles`` binds one."""
    if is_llm_judge(name, **options):
        ensure_grader_bound(name, task_roles)


def rewarding_judges() -> list[str]:
    """The judges that offer a training reward, in registry order."""
    return [name for name, spec in JUDGES.items() if spec.reward is not None]


def judge_reward(name: str) -> JudgeReward | None:
    """The training reward judge ``name`` offers (``mara_bench.judges.rewards``); ``None`` when it offers none."""
    return _spec(name).reward
