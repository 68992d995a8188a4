"""The role-matrix view: which role of a multi-agent system made the difference.

Every combination of the suite's role variants ran on the same samples (``mara_bench.leaderboards.run``); each is compared
with the all-baseline combination by the paired test of :mod:`mara_bench.leaderboards.stats` (difference and 95% CI), and
shows what each role cost (its tokens from the ``accounting`` score). A role's *effect* is the combination where only
that role left its baseline: "trained planner with base worker gains X".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mara_bench.leaderboards.columns import ACCOUNTING_SCORE
from mara_bench.leaderboards.stats import PairedTest, paired_drop_test
from mara_bench.leaderboards.store import HistoryStore, Run
from mara_bench.leaderboards.suite import RoleMatrix


@dataclass(frozen=True)
class MatrixRow:
    """One combination of role variants and its result."""

    combination: dict[str, str]
    run: Run | None
    versus_baseline: PairedTest | None
    """Paired difference from the all-baseline combination on their common samples (None for the baseline)."""
    role_tokens: dict[str, float | None]
    """Mean tokens (in + out) per question of each matrix role."""
    cost_usd: float | None


@dataclass(frozen=True)
class RoleEffect:
    """A role moved off its baseline alone: the combination's difference from the all-baseline one."""

    role: str
    variant: str
    test: PairedTest | None


@dataclass(frozen=True)
class RoleMatrixView:
    task: str
    system: str
    roles: list[str]
    rows: list[MatrixRow]
    effects: list[RoleEffect]


def role_matrix_view(store: HistoryStore, runs: list[Run], matrix: RoleMatrix) -> RoleMatrixView:
    """The matrix table from the latest run of each combination."""
    latest: dict[str, Run] = {}
    for run in runs:  # oldest first: the last one wins
        if run.task == matrix.task and run.system == matrix.system:
            latest[run.checkpoint] = run
    baseline_run = latest.get(matrix.label(matrix.baseline()))
    rows = [
        _row(store, combination, latest.get(matrix.label(combination)), baseline_run, matrix)
        for combination in matrix.combinations()
    ]
    by_label = {matrix.label(row.combination): row for row in rows}
    effects = []
    for role, variants in matrix.roles.items():
        for variant in list(variants)[1:]:
            row = by_label[matrix.label({**matrix.baseline(), role: variant})]
            effects.append(RoleEffect(role, variant, row.versus_baseline))
    return RoleMatrixView(matrix.task, matrix.system, list(matrix.roles), rows, effects)


def _row(
    store: HistoryStore,
    combination: dict[str, str],
    run: Run | None,
    baseline: Run | None,
    matrix: RoleMatrix,
) -> MatrixRow:
    if run is None:
        return MatrixRow(combination, None, None, dict.fromkeys(matrix.roles), None)
    accounting = {m.metric: m.value for m in store.metrics(run.id) if m.score == ACCOUNTING_SCORE}
    tokens = {}
    for role in matrix.roles:
        parts = [accounting.get(f"{kind}_tokens_{role}") for kind in ("input", "output")]
        tokens[role] = None if None in parts else sum(parts)
    test = None
    if baseline is not None and run.id != baseline.id and run.headline_score is not None:
        test = _paired(store, baseline, run)
    return MatrixRow(combination, run, test, tokens, accounting.get("cost_usd"))


def _paired(store: HistoryStore, baseline: Run, candidate: Run) -> PairedTest | None:
    base_scores = store.sample_scores(baseline.id, baseline.headline_score)
    cand_scores = store.sample_scores(candidate.id, candidate.headline_score)
    common = sorted(set(base_scores) & set(cand_scores))
    if not common:
        return None
    base = np.array([base_scores[i][0] for i in common])
    cand = np.array([cand_scores[i][0] for i in common])
    return paired_drop_test(base, cand)
