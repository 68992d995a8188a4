"""Scores broken down by a sample metadata field: HLE per ``category`` (MARS tables 2, 4, 5), QA per hop ``type``
where the data carries it (FlashRAG's 2Wiki/HotpotQA ``metadata.type``), WebWalkerQA per ``difficulty_level`` and
``lang``; any other field on request (``-T breakdown=raw_subject``).

``with_breakdowns(scorer, keys)`` adds one metric per key to a judge's scorer: its summary metric (the first of its
metrics -- accuracy and accuracy over judged items for verdict judges, EM/F1 for lexical ...) computed on each
group's questions, plus the group's size ``n`` and its ``unscored`` count, named ``<key>=<group>/<metric>``
(``category=Math/accuracy``). Questions without the field form the group ``(none)``; a key no question carries adds
nothing, so a data file without hop types simply has no hop breakdown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from inspect_ai.scorer import Metric, SampleScore, Scorer, Value, metric

from mara_bench.core.inspect_compat import RegistryInfo, registry_info, scorer_metrics, set_registry_info
from mara_bench.judges.metrics import is_unscored

DEFAULT_BREAKDOWNS: dict[str, tuple[str, ...]] = {
    "hle": ("category",),
    "webwalkerqa": ("difficulty_level", "lang"),
    "twowiki": ("metadata.type",),
    "hotpotqa": ("metadata.type",),
    "musique": ("metadata.type",),
}
"""The benchmark's own breakdowns (metadata keys as the loader stores them)."""

MISSING_GROUP = "(none)"
SKIPPED_SUMMARY_NAMES = ("stderr",)


@metric
def breakdown(key: str, summary: Metric) -> Metric:
    """``summary`` per value of sample metadata ``key``, with each group's ``n`` and ``unscored`` count."""

    def compute(scores: list[SampleScore]) -> Value:
        groups: dict[str, list[SampleScore]] = defaultdict(list)
        carried = False
        for score in scores:
            metadata = score.sample_metadata or {}
            carried = carried or key in metadata
            groups[str(metadata.get(key, MISSING_GROUP))].append(score)
        if not carried:
            return {}
        label = key.rsplit(".", 1)[-1]
        result: dict[str, float] = {}
        for group, members in sorted(groups.items()):
            values = summary(members)
            named = values if isinstance(values, dict) else {"value": values}
            prefix = f"{label}={group}/"
            result.update(
                {prefix + name: float(v) for name, v in named.items() if name not in SKIPPED_SUMMARY_NAMES}
            )
            result[prefix + "n"] = float(len(members))
            result[prefix + "unscored"] = float(sum(is_unscored(m.score.value) for m in members))
        return result

    return compute


def with_breakdowns(scorer: Scorer, keys: Sequence[str]) -> Scorer:
    """``scorer`` with a ``breakdown`` metric per key (its own metrics kept; the first is the per-group summary)."""
    if not keys:
        return scorer
    metrics = scorer_metrics(scorer)
    if not isinstance(metrics, list) or not metrics or isinstance(metrics[0], dict):
        raise ValueError(f"cannot break down scorer {registry_info(scorer).name!r}: it has no summary metric")
    extra = [breakdown(key, metrics[0]) for key in dict.fromkeys(keys)]
    info = registry_info(scorer)
    metadata = {**info.metadata, "metrics": [*metrics, *extra]}
    set_registry_info(scorer, RegistryInfo(type=info.type, name=info.name, metadata=metadata))
    return scorer


def breakdown_keys(benchmark: str, requested: str | Sequence[str] | None) -> list[str]:
    """The benchmark's own breakdowns plus the ``-T breakdown=`` ones (comma-separated metadata keys)."""
    extra = requested.split(",") if isinstance(requested, str) else list(requested or [])
    return list(
        dict.fromkeys([*DEFAULT_BREAKDOWNS.get(benchmark, ()), *(k.strip() for k in extra if k.strip())])
    )
