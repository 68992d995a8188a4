"""Read Inspect logs (a local folder or any fsspec URL) into leaderboard rows.

One log becomes one :class:`RunRecord`: who was evaluated (checkpoint, model), on what (task, system, protocol,
dataset hash), judged how (scorers and judge model), the metrics with 95% CIs (Wilson for a mean of 0/1 scores),
and every sample's score reduced over epochs (mean), keyed by sample id so that runs can be compared pairwise.
Identity comes from the task metadata written by :mod:`mara_bench.leaderboards.run` and by the harness (read through
``mara_bench.harness.task_metadata.TaskMetadata``: system, protocol, judge, dataset hash, tool cache) when present, else from
the task args and the model; a log that records no dataset hash (written before the harness recorded one) gets
one computed from its sample summaries with the same ``dataset_hash`` function.

The headline and the per-sample rows always agree: for a log of one of our judges (task metadata ``judge`` and
``judge_options``) the headline is the judge's declared one (``mara_bench.judges.registry.headline``: math → ``correct`` /
accuracy, lexical → ``em`` or ``f1``, …) and each sample's row of that scorer holds the same key of its dict value,
stored under the scorer's name. Other dict-valued scores (which Inspect splits into one score per key) keep one row
per key. A run also counts its *unscored* samples: an attempt the grader could not judge, or a sample that errored.
What grading cost (the grader roles' tokens and dollars per attempt, from Inspect's per-role usage) is stored as
the metrics of a ``judge`` score, beside the agent's ``accounting``.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime

import fsspec
from inspect_ai.log import (
    EvalLog,
    EvalSampleSummary,
    list_eval_logs,
    read_eval_log,
    read_eval_log_sample_summaries,
)
from inspect_ai.scorer import value_to_float

from mara_bench.harness.task_metadata import TaskMetadata, dataset_hash
from mara_bench.judges import registry as judge_registry
from mara_bench.judges.metrics import is_unscored
from mara_bench.leaderboards.metrics import judge_metrics, log_metrics
from mara_bench.leaderboards.records import RunRecord, SampleScore
from mara_bench.leaderboards.run import META_CHECKPOINT, META_CODE_VERSION, META_NIGHT, META_SUITE, META_TASK

ANSWER_CHARS = 500
_to_float = value_to_float()


class SkippedLogWarning(UserWarning):
    """A log that could not be collected (corrupted, partial or unfinished); the message names it."""


class UnusableLog(ValueError):
    """Raised by :func:`read_run` for a log that cannot become a row."""


def list_logs(location: str) -> list[str]:
    """Every Inspect log (``.eval`` and ``.json``) under ``location``, oldest first."""
    return [info.name for info in list_eval_logs(location, recursive=True, descending=False)]


def file_hash(location: str) -> str:
    """SHA-256 of the log's bytes: the key that makes ingestion idempotent."""
    digest = hashlib.sha256()
    with fsspec.open(location, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def file_stat(location: str) -> tuple[int, int] | None:
    """``(size, modification time in ns)`` of a log file, or None where its filesystem reports no time."""
    info = fsspec.core.url_to_fs(location)[0].info(location)
    mtime = info.get("mtime") or info.get("LastModified") or info.get("updated")
    if isinstance(mtime, str):
        try:
            mtime = datetime.fromisoformat(mtime.replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(mtime, datetime):
        mtime = mtime.timestamp()
    if not isinstance(mtime, int | float) or "size" not in info:
        return None
    return int(info["size"]), int(mtime * 1_000_000_000)


def collect(location: str) -> Iterator[RunRecord]:
    """Rows for every usable log under ``location``; unusable ones are skipped with a :class:`SkippedLogWarning`."""
    for path in list_logs(location):
        try:
            record = read_run(path)
        except UnusableLog as error:
            warnings.warn(f"skipping log {path}: {error}", SkippedLogWarning, stacklevel=2)
            continue
        yield record


def read_run(path: str, log_hash: str | None = None) -> RunRecord:
    """The row for one log; raises :class:`UnusableLog` for a corrupted, partial or unfinished log."""
    try:
        log = read_eval_log(path, header_only=True)
    except Exception as error:  # any parse failure means the file is corrupted or truncated
        raise UnusableLog(f"cannot be read ({type(error).__name__}: {error})") from error
    if log.status != "success" or log.results is None:
        raise UnusableLog(f"status is {log.status!r} (partial or unfinished run)")
    try:
        summaries = read_eval_log_sample_summaries(path)
    except Exception as error:
        raise UnusableLog(f"samples cannot be read ({type(error).__name__}: {error})") from error
    metadata = log.eval.metadata or {}
    task = TaskMetadata.read(metadata)
    task_args = log.eval.task_args or {}
    headline_score, headline_metric, keys = _headline(log)
    samples = _reduced_samples(summaries, keys)
    return RunRecord(
        log_hash=log_hash or file_hash(path),
        log_location=path,
        checkpoint=str(metadata.get(META_CHECKPOINT) or log.eval.model),
        model=log.eval.model,
        task=str(metadata.get(META_TASK) or log.eval.task),
        inspect_task=log.eval.task,
        system=str(task_args.get("system") or task.system or _plan_name(log)),
        protocol=_protocol_name(task_args.get("protocol") or task.protocol),
        judge=str(task.judge or ",".join(sorted(s.name for s in log.eval.scorers or []))),
        judge_model=_judge_model(log) or task.judge_model,
        dataset_hash=task.dataset_hash or dataset_hash(summaries),
        code_version=_code_version(log),
        created=datetime.fromisoformat(log.eval.created),
        night=str(metadata.get(META_NIGHT) or log.eval.created[:10]),
        suite=metadata.get(META_SUITE),
        headline_score=headline_score,
        headline_metric=headline_metric,
        tool_snapshot=tool_snapshot_label(task.tool_cache),
        n_samples=len({str(summary.id) for summary in summaries}),
        n_unscored=_unscored(summaries, headline_score),
        metrics=[
            *log_metrics(log, samples, (headline_score, headline_metric)),
            *judge_metrics(log, len(summaries)),
        ],
        samples=samples,
    )


def tool_snapshot_label(cache: object) -> str | None:
    """Which tool responses a run saw, from its task metadata ``tool_cache``: ``NAME@<id>`` for a frozen snapshot
    (the same responses every night), ``NAME (open, <mode>)`` for one still being recorded, ``None`` for the live
    web (no cache)."""
    if not isinstance(cache, dict) or not cache.get("snapshot"):
        return None
    if cache.get("frozen") and cache.get("snapshot_id"):
        return f"{cache['snapshot']}@{str(cache['snapshot_id']).removeprefix('sha256:')[:12]}"
    return f"{cache['snapshot']} (open, {cache.get('mode')})"


def _headline(log: EvalLog) -> tuple[str | None, str | None, dict[str, str]]:
    """(headline score, headline metric, {scorer name: value key}) of a log.

    For one of our judges: the judge's declared headline, and the value key of each of its scorers (``math`` and
    the named-answer ones like ``math_solver``). Otherwise Inspect's resolved headline and no keys.
    """
    task = TaskMetadata.read(log.eval.metadata)
    judge = task.judge
    if isinstance(judge, str) and judge in judge_registry.JUDGES:
        declared = judge_registry.headline(judge, **(task.judge_options or {}))
        names = [s.name for s in log.results.scores] if log.results else []
        keys = {name: declared.key for name in names if name == judge or name.startswith(f"{judge}_")}
        return judge, declared.metric, keys
    headline = log.results.headline if log.results else None
    if headline is not None:
        return headline.score, headline.metric, {}
    first_score = log.results.scores[0] if log.results and log.results.scores else None
    return (first_score.name if first_score else None), _first_metric(first_score), {}


def _unscored(summaries: list[EvalSampleSummary], score: str | None) -> int:
    """Sample ids that errored, or that have an attempt of ``score`` the grader could not judge."""
    unscored = set()
    for summary in summaries:
        attempt = (summary.scores or {}).get(score) if score else None
        if summary.error or (attempt is not None and is_unscored(attempt.value)):
            unscored.add(str(summary.id))
    return len(unscored)


def _reduced_samples(summaries: list[EvalSampleSummary], keys: dict[str, str]) -> list[SampleScore]:
    """Per (score, sample id): the mean over epochs of the numeric score; unscored samples are left out.

    A dict value of a scorer named in ``keys`` gives one row under the scorer's name (its declared key); any other
    dict value gives one row per key.
    """
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    answers: dict[tuple[str, str], str | None] = {}
    for summary in summaries:
        if summary.error or not summary.scores:
            continue
        for name, score in summary.scores.items():
            if isinstance(score.value, dict) and name in keys:
                if is_unscored(score.value):
                    continue
                items = [(name, score.value.get(keys[name]))]
            else:
                items = score.value.items() if isinstance(score.value, dict) else [(name, score.value)]
            for score_name, raw in items:
                value = _numeric(raw)
                if value is None:
                    continue
                key = (score_name, str(summary.id))
                values[key].append(value)
                answers.setdefault(key, score.answer[:ANSWER_CHARS] if score.answer else None)
    return [
        SampleScore(score=k[0], sample_id=k[1], value=sum(v) / len(v), answer=answers[k])
        for k, v in values.items()
    ]


def _numeric(raw: object) -> float | None:
    if raw is None or isinstance(raw, list | dict):
        return None
    value = _to_float(raw)
    return None if math.isnan(value) else float(value)


def _first_metric(score) -> str | None:
    return next(iter(score.metrics), None) if score else None


def _protocol_name(protocol: object) -> str:
    """A protocol given as ``-T protocol=name`` or recorded as a summary mapping with a ``name``."""
    if isinstance(protocol, dict):
        protocol = protocol.get("name")
    return str(protocol or "default")


def _judge_model(log: EvalLog) -> str | None:
    roles = log.eval.model_roles or {}
    grader = roles.get("grader")
    if grader is None:
        return None
    configs = grader if isinstance(grader, list) else [grader]
    return ",".join(config.model for config in configs)


def _code_version(log: EvalLog) -> str | None:
    metadata = log.eval.metadata or {}
    if metadata.get(META_CODE_VERSION):
        return str(metadata[META_CODE_VERSION])
    revision = log.eval.revision
    if revision is None:
        return None
    return revision.commit[:12] + ("-dirty" if revision.dirty else "")


def _plan_name(log: EvalLog) -> str:
    steps = log.plan.steps if log.plan else []
    return "+".join(step.solver for step in steps) or "default"
