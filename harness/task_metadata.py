"""What the harness records about a run in its eval log's task metadata, and what the leaderboards read back: one
typed record, ``TaskMetadata``, written by ``mara_bench.harness.evaluation`` and read by ``mara_bench.leaderboards.collect``.

Every field has a default, so a log written before a field existed still reads (the field is then ``None`` or
empty, and the reader falls back as it did before the field was recorded).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol


class _SampleLike(Protocol):
    """An Inspect ``Sample``, or a log's ``EvalSampleSummary`` of one."""

    id: int | str | None
    input: Any
    target: Any


@dataclass(frozen=True)
class TaskMetadata:
    """The task metadata of one evaluation (``Task.metadata``, stored in the log as ``log.eval.metadata``)."""

    dataset: dict[str, Any] | None = None
    """Provenance of the samples (``mara_bench.harness.datasets.loader``): benchmark, source and its revision or file sha256,
    row counts, the ids asked for and the sha256 of the id list."""
    dataset_hash: str | None = None
    """``dataset_hash`` of the evaluated samples: changes whenever the evaluated set changes."""
    system: str | None = None
    """The agent system (``-T system``)."""
    system_options: dict[str, Any] = field(default_factory=dict)
    """The system's options in effect (the ``-T`` ones and the protocol's)."""
    system_options_from_protocol: list[str] = field(default_factory=list)
    """Which of ``system_options`` the protocol set."""
    protocol: dict[str, Any] | None = None
    """The protocol's summary (``Protocol.summary``: name, epochs, reducers, ...)."""
    judge: str | None = None
    """The judge's name (``mara_bench.judges.registry``)."""
    judge_options: dict[str, Any] = field(default_factory=dict)
    """The judge's options."""
    judge_model: str | None = None
    """The grader model, for an LLM judge."""
    second_judge_model: str | None = None
    """The second grader model (``-T second_grader``), if any."""
    role_models: dict[str, str | None] = field(default_factory=dict)
    """Which model serves each agent role of the system (``None``: the evaluated model)."""
    tool_cache: dict[str, Any] | None = None
    """The tool cache: mode, store, snapshot and its id (``None``: off, or a system without tools)."""
    resolved_checkpoint: dict[str, Any] | None = None
    """What the evaluated ``local/`` model resolved to (``mara_bench.harness.providers.provenance``)."""
    resolved_role_checkpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What each ``local/`` role model resolved to, by role."""
    retrieval_index: dict[str, Any] | None = None
    """The local corpus index the system's tools search, if any."""

    def data(self) -> dict[str, Any]:
        """The record as plain data (what ``Task.metadata`` holds)."""
        return asdict(self)

    @classmethod
    def read(cls, metadata: Mapping[str, Any] | None) -> TaskMetadata:
        """The record in a log's task metadata; the fields it lacks (an older log, or a task not built by the
        harness) keep their defaults, and keys that are not fields (the leaderboards' own) are ignored."""
        metadata = metadata or {}
        return cls(**{f.name: metadata[f.name] for f in fields(cls) if f.name in metadata})


def dataset_hash(samples: Iterable[_SampleLike]) -> str:
    """SHA-256 (16 hex digits) over the sorted distinct (id, input, target) of ``samples`` -- Inspect ``Sample``s
    when the harness records it, a log's sample summaries when the leaderboards compute it for an older log."""
    rows = sorted({(str(s.id), _text(s.input), json.dumps(s.target)) for s in samples})
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps([getattr(message, "text", str(message)) for message in value])  # type: ignore[union-attr]
