"""The leaderboard row of one evaluated log (``RunRecord``) with its metrics and per-sample scores: what
``mara_bench.leaderboards.collect`` reads from a log and ``mara_bench.leaderboards.store`` stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class MetricValue:
    score: str
    metric: str
    value: float
    stderr: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class SampleScore:
    score: str
    sample_id: str
    value: float
    answer: str | None = None


@dataclass
class RunRecord:
    """One evaluated log, flattened for the history store."""

    log_hash: str
    log_location: str
    checkpoint: str
    model: str
    task: str
    inspect_task: str
    system: str
    protocol: str
    judge: str
    judge_model: str | None
    dataset_hash: str
    code_version: str | None
    created: datetime
    night: str
    suite: str | None
    headline_score: str | None
    headline_metric: str | None
    tool_snapshot: str | None = None
    """The tool responses the run saw (``tool_snapshot_label``); ``None``: the live web, no tool cache."""
    n_samples: int = 0
    """Distinct sample ids in the log, scored or not."""
    n_unscored: int = 0
    """Samples with an attempt the grader could not judge, or that errored (left out of the sample rows)."""
    metrics: list[MetricValue] = field(default_factory=list)
    samples: list[SampleScore] = field(default_factory=list)

    @property
    def headline(self) -> MetricValue | None:
        return next(
            (m for m in self.metrics if (m.score, m.metric) == (self.headline_score, self.headline_metric)),
            None,
        )
