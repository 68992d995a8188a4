"""``mara nightly SUITE.yaml --out DIR``: run a suite, ingest its logs, compare with baselines, render the site.

Layout under ``--out``: ``logs/<night>/`` (Inspect eval-set logs; a second call the same night only runs what is
missing), ``history.sqlite`` (unless ``--db`` names another database), ``site/index.html`` and ``site/summary.md``.
Exit codes: 0 no regression, 1 at least one regression (with ``settings.fail_on: confirmed``, at least one that is
not judge-sensitive or unchecked), 2 a bad suite or argument, 3 no failing regression but some tasks did not finish
(run the same command again to resume them).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from leaderboards.compare import REGRESSION, nightly_comparisons, should_fail
from leaderboards.run import run_suite
from leaderboards.site import render_site
from leaderboards.store import HistoryStore
from leaderboards.suite import SuiteError, load_suite

DISPLAYS = ("full", "conversation", "rich", "plain", "log", "none")


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
    try:
        suite = load_suite(args.suite)
    except SuiteError as error:
        print(f"mara nightly: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    night = args.night or datetime.now(UTC).strftime("%Y-%m-%d")
    logs = out / "logs"
    finished = True
    if not args.no_run:
        night_logs = logs / night
        night_logs.mkdir(parents=True, exist_ok=True)
        try:
            finished = run_suite(suite, str(night_logs), night, display=args.display)
        except SuiteError as error:
            print(f"mara nightly: {error}", file=sys.stderr)
            return 2
        if not finished:
            print(
                f"mara nightly: some tasks did not finish; run again to resume ({night_logs})",
                file=sys.stderr,
            )
    store = HistoryStore(args.db or str(out / "history.sqlite"))
    try:
        ingested = store.ingest(str(logs)) if logs.exists() else None
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
