"""Extra leaderboard columns read from a run's stored metrics: what a question cost (the ``accounting`` score:
tokens, tool calls, pages and papers read, python calls, dollars; and the graders' tokens and dollars, the ``judge``
score) and the headline metric's breakdowns (``category=Math/...``).

A run without an ``accounting`` score (older logs, other harnesses) or without a price shows blanks.
"""

from __future__ import annotations

from dataclasses import dataclass

from mara_bench.leaderboards.metrics import JUDGE_SCORE
from mara_bench.leaderboards.store import HistoryStore, Run

ACCOUNTING_SCORE = "accounting"
ACCOUNTING_COLUMNS = (
    (ACCOUNTING_SCORE, "input_tokens", "tokens in"),
    (ACCOUNTING_SCORE, "output_tokens", "tokens out"),
    (ACCOUNTING_SCORE, "tool_calls", "tool calls"),
    (ACCOUNTING_SCORE, "pages_read", "pages"),
    (ACCOUNTING_SCORE, "papers_read", "papers"),
    (ACCOUNTING_SCORE, "python_calls", "python"),
    (ACCOUNTING_SCORE, "cost_usd", "$ / question"),
    (JUDGE_SCORE, "input_tokens", "judge tokens in"),
    (JUDGE_SCORE, "output_tokens", "judge tokens out"),
    (JUDGE_SCORE, "cost_usd", "judge $ / question"),
)
"""(stored score, metric, column header) per question, in display order: the agent's cost, then the graders'."""
GROUP_SEPARATOR = "="


@dataclass(frozen=True)
class Breakdown:
    """The headline metric on one group of questions (``field=value``)."""

    group: str
    value: float
    n: int | None
    unscored: int | None


@dataclass(frozen=True)
class RunColumns:
    accounting: tuple[float | None, ...]
    """One value per ``ACCOUNTING_COLUMNS`` entry (``None``: not reported)."""
    breakdowns: tuple[Breakdown, ...]


def run_columns(store: HistoryStore, run: Run) -> RunColumns:
    """The extra columns of ``run`` from its stored metrics."""
    metrics = store.metrics(run.id)
    costs = {(m.score, m.metric): m.value for m in metrics if m.score in (ACCOUNTING_SCORE, JUDGE_SCORE)}
    headline = {m.metric: m.value for m in metrics if m.score == run.headline_score}
    suffix = f"/{run.headline_metric}"
    breakdowns = []
    for name, value in headline.items():
        if GROUP_SEPARATOR not in name or not name.endswith(suffix):
            continue
        group = name.removesuffix(suffix)
        n, unscored = headline.get(f"{group}/n"), headline.get(f"{group}/unscored")
        breakdowns.append(
            Breakdown(
                group, value, None if n is None else int(n), None if unscored is None else int(unscored)
            )
        )
    return RunColumns(
        accounting=tuple(costs.get((score, metric)) for score, metric, _ in ACCOUNTING_COLUMNS),
        breakdowns=tuple(sorted(breakdowns, key=lambda b: b.group)),
    )
