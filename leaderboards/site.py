"""Render the leaderboard history as a static site (``index.html`` + ``assets/``) and a Markdown summary.

The page needs no server: tables per task with 95% CIs and links to the Inspect logs, trend plots per checkpoint
over nights, tonight's comparisons (with the samples that got worse, each regression's judge check and the smallest
drop each comparison could detect), the two graders' agreement where a second grader judged, the role matrix
(``mara_bench.leaderboards.role_matrix``), and the cross-solver matrix as a table and a heat map. Every string that can come from a model, a log or a suite is escaped by Jinja2's autoescape (HTML) or by
:func:`markdown_text` (Markdown).
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
from jinja2 import Environment, FileSystemLoader, select_autoescape

from mara_bench.harness.audit import HUMAN_SCORE
from mara_bench.judges.grader import SECOND_GRADER_ROLE
from mara_bench.leaderboards.columns import ACCOUNTING_COLUMNS, RunColumns, run_columns
from mara_bench.leaderboards.compare import REGRESSION, Comparison
from mara_bench.leaderboards.plots import TrendPoint, heat_map, trend_plot
from mara_bench.leaderboards.role_matrix import RoleMatrixView, role_matrix_view
from mara_bench.leaderboards.stats import JudgeAgreement, judge_agreement
from mara_bench.leaderboards.store import HistoryStore, Run
from mara_bench.leaderboards.suite import CrossSolver, RoleMatrix

LINKABLE_SCHEMES = ("http", "https")
TEMPLATES = Path(__file__).with_name("templates")


@dataclass(frozen=True)
class BoardRow:
    run: Run
    rank: int
    log_href: str | None
    columns: RunColumns
    """Cost accounting and breakdowns (``mara_bench.leaderboards.columns``)."""


@dataclass
class TaskBoard:
    task: str
    metric: str
    rows: list[BoardRow]
    trend_png: str
    tool_snapshots: list[str] = field(default_factory=list)
    """The tool responses the rows saw, when they differ (``live web`` or ``NAME@id``): their scores were
    measured on different pages, which the board says above the table."""


@dataclass(frozen=True)
class AgreementRow:
    """The two graders' verdicts on one run's samples (``-T second_grader=``)."""

    run: Run
    agreement: JudgeAgreement


@dataclass(frozen=True)
class AuditView:
    """Each grader's verdicts against people's on a judge audit (``-T audit=``): agreement = the judge's accuracy."""

    run: Run
    grader: JudgeAgreement
    second_grader: JudgeAgreement | None


@dataclass
class CrossSolverView:
    system: str
    tasks: list[str]
    rows: list[tuple[str, list[tuple[float | None, float | None]]]]
    heat_map_png: str


@dataclass
class SiteView:
    title: str
    night: str
    generated: str
    comparisons: list[Comparison]
    boards: list[TaskBoard]
    cross_solver: CrossSolverView | None = None
    regressions: list[Comparison] = field(default_factory=list)
    agreements: list[AgreementRow] = field(default_factory=list)
    audits: list[AuditView] = field(default_factory=list)
    role_matrix: RoleMatrixView | None = None


def render_site(
    store: HistoryStore,
    out_dir: Path,
    night: str,
    comparisons: list[Comparison],
    title: str = "mara-bench leaderboard",
    cross_solver: CrossSolver | None = None,
    suite_name: str | None = None,
    role_matrix: RoleMatrix | None = None,
) -> Path:
    """Write ``out_dir/index.html``, its ``assets/`` and ``out_dir/summary.md``; returns the HTML path.

    With ``suite_name`` the site shows that suite's runs (and runs ingested from logs of no suite) only.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    assets = out_dir / "assets"
    if assets.exists():
        shutil.rmtree(assets)
    assets.mkdir()
    shutil.copyfile(TEMPLATES / "style.css", assets / "style.css")
    runs = [r for r in store.runs() if suite_name is None or r.suite in (None, suite_name)]
    view = SiteView(
        title=title,
        night=night,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        comparisons=comparisons,
        boards=_boards(store, runs, out_dir, assets),
        cross_solver=_cross_solver(store, runs, cross_solver, assets) if cross_solver else None,
        regressions=[c for c in comparisons if c.status == REGRESSION],
        agreements=_agreements(store, runs),
        audits=_audits(store, runs),
        role_matrix=role_matrix_view(store, runs, role_matrix) if role_matrix else None,
    )
    environment = _environment()
    index = out_dir / "index.html"
    index.write_text(environment.get_template("index.html.j2").render(view=view))
    (out_dir / "summary.md").write_text(render_markdown(view))
    return index


def render_markdown(view: SiteView) -> str:
    """The CI-comment summary: tonight's regressions, not-comparable pairs, each task's leader and the role
    matrix."""
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["md"] = markdown_text
    return environment.get_template("summary.md.j2").render(view=view)


def markdown_text(value: object) -> str:
    """Model- or user-provided text made inert in Markdown (GitHub renders HTML and links in comments).

    Quotes stay as they are: they are inert in Markdown text, and ``&#x27;`` would be shown literally in code spans
    and by renderers that do not decode entities."""
    text = html.escape(str(value), quote=False).replace("\n", " ")
    return re.sub(r"([\\`*_{}\[\]()#+!|~])", r"\\\1", text)


def log_href(location: str, out_dir: Path) -> str | None:
    """A link to an Inspect log: a relative path for local files, the URL for http(s), else no link."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        path = Path(unquote(parsed.path) if parsed.scheme else location)
        return Path(os.path.relpath(path.resolve(), out_dir.resolve())).as_posix()
    return location if parsed.scheme in LINKABLE_SCHEMES else None


def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "j2"], default=True),
    )
    environment.filters["num"] = lambda v, digits=3: "–" if v is None else f"{v:.{digits}f}"
    environment.globals["accounting_columns"] = [header for _, _, header in ACCOUNTING_COLUMNS]
    environment.globals["dollar_columns"] = [metric == "cost_usd" for _, metric, _ in ACCOUNTING_COLUMNS]
    return environment


def _boards(store: HistoryStore, runs: list[Run], out_dir: Path, assets: Path) -> list[TaskBoard]:
    by_task: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_task[run.task].append(run)
    boards = []
    for index, (task, task_runs) in enumerate(sorted(by_task.items())):
        latest: dict[tuple, Run] = {}
        nightly: dict[str, dict[str, TrendPoint]] = defaultdict(dict)
        for run in task_runs:  # oldest first: later runs replace earlier ones
            latest[run.series] = run
            if run.headline_value is not None:
                nightly[_series_label(run)][run.night] = TrendPoint(
                    run.night, run.headline_value, run.headline_ci_low, run.headline_ci_high
                )
        ranked = sorted(
            latest.values(), key=lambda r: -(r.headline_value if r.headline_value is not None else -1)
        )
        rows = [
            BoardRow(run, rank + 1, log_href(run.log_location, out_dir), run_columns(store, run))
            for rank, run in enumerate(ranked)
        ]
        metric = ranked[0].headline_metric or "score"
        png = trend_plot(
            assets / f"trend-{index}.png",
            f"{task} — {metric} by night",
            {label: list(points.values()) for label, points in nightly.items()},
            metric,
        )
        seen = sorted({run.tool_snapshot or "live web" for run in ranked})
        boards.append(
            TaskBoard(task, metric, rows, f"assets/{png.name}", tool_snapshots=seen if len(seen) > 1 else [])
        )
    return boards


def _latest(runs: list[Run]) -> list[Run]:
    latest: dict[tuple, Run] = {}
    for run in runs:  # oldest first: the last one wins
        latest[run.series] = run
    return sorted(latest.values(), key=lambda r: (r.task, r.checkpoint, r.system, r.protocol))


def _verdict_agreement(store: HistoryStore, run: Run, first: str, second: str) -> JudgeAgreement | None:
    """Agreement of two scores' 0/1 verdicts on the samples of ``run`` that have both (None when there are none)."""
    a, b = store.sample_scores(run.id, first), store.sample_scores(run.id, second)
    verdicts = [(a[i][0], b[i][0]) for i in sorted(set(a) & set(b))]
    if not verdicts or not all(x in (0.0, 1.0) and y in (0.0, 1.0) for x, y in verdicts):
        return None
    pairs = np.array(verdicts)
    return judge_agreement(pairs[:, 0], pairs[:, 1])


def _agreements(store: HistoryStore, runs: list[Run]) -> list[AgreementRow]:
    """Judge agreement for the latest run of each series judged by a second grader (0/1 verdicts only)."""
    rows = []
    for run in _latest(runs):
        if run.headline_score is not None:
            second = f"{run.headline_score}_{SECOND_GRADER_ROLE}"
            agreement = _verdict_agreement(store, run, run.headline_score, second)
            if agreement is not None:
                rows.append(AgreementRow(run, agreement))
    return rows


def _audits(store: HistoryStore, runs: list[Run]) -> list[AuditView]:
    """Each judge's accuracy against the human verdicts of the latest judge audit of each series."""
    views = []
    for run in _latest(runs):
        if run.headline_score is None:
            continue
        grader = _verdict_agreement(store, run, HUMAN_SCORE, run.headline_score)
        if grader is not None:
            second = f"{run.headline_score}_{SECOND_GRADER_ROLE}"
            views.append(AuditView(run, grader, _verdict_agreement(store, run, HUMAN_SCORE, second)))
    return views


def _cross_solver(store: HistoryStore, runs: list[Run], spec: CrossSolver, assets: Path) -> CrossSolverView:
    latest: dict[tuple[str, str], Run] = {}
    for run in runs:
        if run.system == spec.system:
            latest[(run.checkpoint, run.task)] = run
    rows = []
    for checkpoint in spec.checkpoints:
        cells = []
        for task in spec.tasks:
            run = latest.get((checkpoint, task))
            cells.append(
                (_alone_value(store, run, spec.alone_score), run.headline_value) if run else (None, None)
            )
        rows.append((checkpoint, cells))
    columns = [f"{task} · {part}" for task in spec.tasks for part in ("alone", spec.system)]
    values = [[value for cell in cells for value in cell] for _, cells in rows]
    png = heat_map(
        assets / "cross-solver.png", f"solver alone vs {spec.system}", spec.checkpoints, columns, values
    )
    return CrossSolverView(
        system=spec.system, tasks=list(spec.tasks), rows=rows, heat_map_png=f"assets/{png.name}"
    )


def _alone_value(store: HistoryStore, run: Run, alone_score: str) -> float | None:
    """The solver-alone result stored in the system's run, under the judges' name for a named answer,
    ``<headline judge>_<alone_score>`` (``math_solver``), or a score named ``alone_score`` itself: its headline
    metric, else the sample mean."""
    names = [f"{run.headline_score}_{alone_score}", alone_score]
    for metric in store.metrics(run.id):
        if metric.score in names and metric.metric == run.headline_metric:
            return metric.value
    for name in names:
        values = [value for value, _answer in store.sample_scores(run.id, name).values()]
        if values:
            return sum(values) / len(values)
    return None


def _series_label(run: Run) -> str:
    return f"{run.checkpoint} · {run.system} · {run.protocol}"
