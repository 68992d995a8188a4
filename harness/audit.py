"""Judge audits: a small human-labelled set of answers per judged benchmark, scored by the task's own judge.

An audit file is JSON lines, one judged answer each: ``{"id": <sample id>, "answer": <the response judged>,
"correct": true|false}`` (the human verdict). ``-T audit=FILE`` turns a benchmark task into its audit: the samples
are the file's ids, each "answers" with its audited text (no model is called), the task's judges (``grader``, and
``grader2`` with ``-T second_grader=``) judge it as usual, and a ``human`` score holds the human verdict, so a log
(and the leaderboard's agreement table) shows each judge's accuracy against people.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.invocation import user_path

HUMAN_SCORE = "human"
MAX_AUDIT_BYTES = 64 * 2**20
"""Largest audit file read (a human-labelled set is a few MB at most)."""


@dataclass(frozen=True)
class AuditRow:
    """One human-labelled answer."""

    sample_id: str
    answer: str
    correct: bool


def load_audit(path: str) -> dict[str, AuditRow]:
    """The audit file's rows by sample id; a malformed file is one line naming the file, line and fix."""
    file = user_path(path)
    if not file.is_file():
        raise ConfigError(
            f"audit: {file} is not a file; give a JSON-lines file of {{id, answer, correct}} rows"
        )
    if file.stat().st_size > MAX_AUDIT_BYTES:
        raise ConfigError(
            f"audit: {file} is {file.stat().st_size:,} bytes, over the limit of {MAX_AUDIT_BYTES:,}; an audit file "
            "holds human-labelled answers, a few thousand rows at most: give that file"
        )
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"audit: {file} is not UTF-8 text; give a JSON-lines file of {{id, answer, correct}} rows"
        ) from None
    rows: dict[str, AuditRow] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = _row(file, number, line)
        if row.sample_id in rows:
            raise ConfigError(f"audit: {file}:{number}: id {row.sample_id!r} given twice; keep one")
        rows[row.sample_id] = row
    if not rows:
        raise ConfigError(f"audit: {file} holds no rows; add {{id, answer, correct}} lines")
    return rows


def _row(file: Path, number: int, line: str) -> AuditRow:
    where = f"audit: {file}:{number}"
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: not JSON ({error.msg}); write one JSON object per line") from None
    except RecursionError:
        raise ConfigError(
            f"{where}: nested too deeply; write one flat {{id, answer, correct}} object"
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: not a JSON object; write {{id, answer, correct}}")
    missing = [key for key in ("id", "answer", "correct") if key not in raw]
    if missing:
        raise ConfigError(
            f"{where}: missing key(s) {', '.join(missing)}; each row needs id, answer and correct"
        )
    if not isinstance(raw["correct"], bool) or not isinstance(raw["answer"], str):
        raise ConfigError(f"{where}: 'answer' must be text and 'correct' true or false")
    return AuditRow(str(raw["id"]), raw["answer"], raw["correct"])


@solver
def audited_answers(audit: dict[str, AuditRow]) -> Solver:
    """Each sample's output is its audited answer; no model is called."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:  # noqa: ARG001
        state.output = ModelOutput.from_content(model="audit", content=audit[str(state.sample_id)].answer)
        return state

    return solve


@scorer(metrics=[accuracy()], name=HUMAN_SCORE)
def human_verdict(audit: dict[str, AuditRow]) -> Scorer:
    """The human verdict of each audited answer (1 right, 0 wrong)."""

    async def score(state: TaskState, target: Target) -> Score:  # noqa: ARG001
        row = audit[str(state.sample_id)]
        return Score(value=float(row.correct), answer=row.answer)

    return score
