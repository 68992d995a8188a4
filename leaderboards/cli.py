"""``mara nightly SUITE.yaml --out DIR``: run a suite, ingest its logs, compare with baselines, render the site.

Layout under ``--out``: ``logs/<night>/`` (Inspect eval-set logs; a second call the same night only runs what is
missing), ``history.sqlite`` (unless ``--db`` names another database), ``site/index.html`` and ``site/summary.md``;
``quarantine/<night>/`` holds unfinished logs of earlier nights (a killed run's), moved out of ``logs/`` once.
Bad arguments and a bad suite are one line and exit code 2 before any folder is made.
Exit codes: 0 no regression, 1 at least one regression (with ``settings.fail_on: confirmed``, at least one that is
not judge-sensitive or unchecked), 2 a bad suite or argument, 3 no failing regression but some tasks did not finish
(run the same command again to resume them).
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from mara_bench.harness.redaction import redact_url
from mara_bench.leaderboards.compare import REGRESSION, nightly_comparisons, should_fail
from mara_bench.leaderboards.run import build_tasks, run_suite
from mara_bench.leaderboards.site import render_site
from mara_bench.leaderboards.store import HistoryStore, database_problem
from mara_bench.leaderboards.suite import SuiteError, load_suite

DISPLAYS = ("full", "conversation", "rich", "plain", "log", "none")
NIGHT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
QUARANTINE = "quarantine"
"""Folder under ``--out`` for unfinished logs of earlier nights."""


def check_arguments(args: argparse.Namespace, out: Path, night: str) -> None:
    """``SuiteError`` for a night name that is not a plain label, ``--no-run`` into a missing folder, or a
    ``--db`` that cannot hold the history."""
    if not NIGHT_NAME.fullmatch(night):
        raise SuiteError(
            f"--night {night!r}: a night is a folder name under OUT/logs: letters, digits, '.', '_' and '-', "
            "not starting with '.' (no path separators); e.g. 2026-01-31"
        )
    if args.no_run and not out.is_dir():
        raise SuiteError(
            f"--out {args.out}: no such folder; --no-run only ingests, compares and renders what an earlier run "
            "wrote there (check the path, or drop --no-run to run the suite)"
        )
    if args.db and (problem := database_problem(args.db)):
        raise SuiteError(f"--db {redact_url(args.db)}: {problem}")


@contextlib.contextmanager
def removed_if_left_empty(folder: Path) -> Iterator[None]:
    """Make ``folder`` (and missing parents); those of them still empty afterwards are removed again."""
    made = [folder, *folder.parents]
    made = [path for path in made if not path.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield
    finally:
        for path in made:  # deepest first
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()


def quarantine_unfinished(skipped: list[str], logs: Path, night: str, quarantine: Path) -> None:
    """Move the unusable logs of earlier nights (a killed run's partial log would warn on every later run) to
    ``quarantine``, keeping their paths under ``logs``; tonight's stay, for a rerun to resume."""
    moved = 0
    for name in skipped:
        path = Path(name.removeprefix("file://"))
        try:
            relative = path.resolve().relative_to(logs.resolve())
        except ValueError:
            continue  # not a local log under OUT/logs
        if relative.parts[0] == night:
            continue
        target = quarantine / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        path.replace(target)
        moved += 1
    if moved:
        print(
            f"mara nightly: moved {moved} unfinished log(s) of earlier nights to {quarantine} "
            "(rerun that night with --night NIGHT to redo it)",
            file=sys.stderr,
        )


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mara nightly", description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", help="suite YAML file (see leaderboards/suites/)")
    parser.add_argument("--out", required=True, help="output folder for logs, history and the site")
    parser.add_argument(
        "--baseline",
        help="folder or fsspec URL of Inspect logs to compare against "
        "(default: the previous night of each series)",
    )
    parser.add_argument(
        "--db", help="SQLAlchemy URL or SQLite path for the history (default: OUT/history.sqlite)"
    )
    parser.add_argument("--night", help="label of this night (default: today's UTC date, YYYY-MM-DD)")
    parser.add_argument(
        "--no-run", action="store_true", help="skip the evals; ingest, compare and render only"
    )
    parser.add_argument(
        "--display", default="plain", choices=DISPLAYS, help="Inspect display while running evals"
    )
    return parser


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    out = Path(args.out)
    night = args.night or datetime.now(UTC).strftime("%Y-%m-%d")
    try:  # every argument is checked, and the night's tasks built, before any folder is made
        suite = load_suite(args.suite)
        check_arguments(args, out, night)
        tasks = None if args.no_run else build_tasks(suite, night)
    except SuiteError as error:
        print(f"mara nightly: {error}", file=sys.stderr)
        return 2
    logs = out / "logs"
    finished = True
    if tasks is not None:
        night_logs = logs / night
        with removed_if_left_empty(night_logs):
            finished = run_suite(suite, str(night_logs), night, display=args.display, tasks=tasks)
        if not finished:
            print(
                f"mara nightly: some tasks did not finish; run again to resume ({night_logs})",
                file=sys.stderr,
            )
    store = HistoryStore(args.db or str(out / "history.sqlite"))
    try:
        ingested = store.ingest(str(logs)) if logs.exists() else None
        if ingested:
            quarantine_unfinished(ingested.skipped, logs, night, out / QUARANTINE)
        baseline_runs = None
        if args.baseline:
            hashes = store.ingest(args.baseline).hashes
            baseline_runs = [run for run in map(store.run_for_log, hashes) if run is not None]
        comparisons = nightly_comparisons(store, night, suite, baseline_runs)
        index = render_site(
            store,
            out / "site",
            night,
            comparisons,
            title=f"{suite.name} leaderboard",
            cross_solver=suite.cross_solver,
            suite_name=suite.name,
            role_matrix=suite.role_matrix,
        )
    finally:
        store.close()
    regressions = [c for c in comparisons if c.status == REGRESSION]
    failing = [c for c in regressions if should_fail(c, suite.settings.fail_on)]
    added = len(ingested.added) if ingested else 0
    print(f"ingested {added} new log(s); {len(comparisons)} comparison(s), {len(regressions)} regression(s)")
    for comparison in regressions:
        run, test = comparison.candidate, comparison.test
        print(
            f"REGRESSION {run.checkpoint} {run.task} {run.system} {run.protocol} {comparison.kind}: "
            f"{100 * test.delta:+.1f} pts (95% CI {100 * test.ci_low:+.1f}, {100 * test.ci_high:+.1f}), "
            f"p adj. {comparison.p_adjusted:.4g}; {comparison.judge_check}"
        )
    print(f"site: {index}\nsummary: {index.parent / 'summary.md'}")
    if failing:
        return 1
    return 0 if finished else 3
