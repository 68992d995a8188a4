"""The static site: escaped model text, tables and plots rendered in real headless Chromium, Markdown summary.

The Chromium screenshot is kept as a test artifact: ``$MARA_TEST_ARTIFACTS/mara-leaderboard-screenshot.png``
(default: the system temp folder).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from markupsafe import escape
from sqlalchemy import select
from sqlalchemy.orm import Session

from mara_bench.leaderboards.compare import compare_pair, decide, nightly_comparisons
from mara_bench.leaderboards.site import log_href, markdown_text, render_site
from mara_bench.leaderboards.store import HistoryStore, Run
from mara_bench.leaderboards.suite import parse_suite

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture
def site(eval_logs, tmp_path, make_suite) -> Path:
    suite = parse_suite(make_suite())
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    store.ingest(str(eval_logs))
    comparisons = nightly_comparisons(store, "2026-01-01", suite)
    index = render_site(
        store,
        tmp_path / "site",
        "2026-01-01",
        comparisons,
        title="lbtest <b>board</b>",
        cross_solver=suite.cross_solver,
        suite_name=suite.name,
    )
    store.close()
    return index


def test_model_text_is_escaped_in_html_and_markdown(site, xss_answer):
    page = site.read_text()
    assert xss_answer not in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "lbtest &lt;b&gt;board&lt;/b&gt;" in page
    summary = (site.parent / "summary.md").read_text()
    assert "**1 regression**" in summary and "<b>" not in summary and "&lt;b&gt;" in summary
    assert markdown_text("a|b <x> [l](u)") == r"a\|b &lt;x&gt; \[l\]\(u\)"


HOSTILE = '<i onmouseover="x()">{}</i> | [l](javascript:x) `c` *e*'
"""Markup, a Markdown table separator, a link, code and emphasis: must show as plain text in both outputs."""


def test_every_identity_string_is_escaped_in_html_and_markdown(eval_logs, tmp_path):
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    store.ingest(str(eval_logs))
    columns = ("checkpoint", "model", "task", "system", "protocol", "judge", "judge_model", "code_version")
    with Session(store.engine) as session, session.begin():
        for run in session.scalars(select(Run)):
            for column in columns:
                setattr(run, column, HOSTILE.format(f"{column}-{getattr(run, column)}"))
    direct = {r.checkpoint: r for r in store.runs(system=HOSTILE.format("system-direct"))}
    flaky, good = direct[HOSTILE.format("checkpoint-flaky")], direct[HOSTILE.format("checkpoint-good")]
    comparisons = decide([compare_pair(store, flaky, good, "checkpoint pair")])
    index = render_site(store, tmp_path / "site", "2026-01-01", comparisons, title=HOSTILE.format("title"))
    page, summary = index.read_text(), (index.parent / "summary.md").read_text()

    assert "<i " not in page and "<i " not in summary
    for column in columns:
        assert str(escape(getattr(flaky, column))) in page, column
    for column in ("checkpoint", "task", "system", "protocol"):
        assert markdown_text(getattr(flaky, column)) in summary, column
    assert "](javascript" not in summary
    # the regression row keeps its 8 cells: the names' "|" cannot split the Markdown table
    row = next(line for line in summary.splitlines() if "checkpoint-flaky" in line and "pair" in line)
    assert len(re.findall(r"(?<!\\)\|", row)) == 9, row


def test_log_links(tmp_path):
    site_dir = tmp_path / "out" / "site"
    log = tmp_path / "out" / "logs" / "n1" / "a.eval"
    assert log_href(log.as_uri(), site_dir) == "../logs/n1/a.eval"
    assert log_href("https://example.org/logs/a.eval", site_dir) == "https://example.org/logs/a.eval"
    assert log_href("javascript:alert(1)", site_dir) is None
    assert log_href("s3://bucket/a.eval", site_dir) is None


def test_site_renders_in_headless_chromium_without_running_model_scripts(site, tmp_path, xss_answer):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install -y chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(site.as_uri())
        for summary in page.locator("details > summary").all():
            summary.click()
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#regression-count").inner_text() == "1 regression"
        # leaderboard: 4 series (good/flaky x direct/vc) ranked by final accuracy; flaky direct is last at 0.800
        rows = page.locator("table.leaderboard tbody tr")
        assert rows.count() == 4
        assert rows.nth(3).locator("td.checkpoint").inner_text().splitlines() == ["flaky", "lbmock/arith"]
        assert rows.nth(3).locator("td.value").inner_text().splitlines()[0] == "0.800"  # its 95% CI below
        assert rows.nth(0).locator("a").get_attribute("href").endswith(".eval")
        # the whole table fits a 1,280 px window: nothing to scroll sideways to
        assert (
            page.evaluate(
                "(t => t.getBoundingClientRect().right)(document.querySelector('table.leaderboard'))"
            )
            <= 1280
        )
        # the samples that got worse, in natural id order, with the model's answer shown as text
        flipped = page.locator("table.answers").first.locator("tbody tr")
        assert flipped.locator("td:first-child").all_inner_texts() == [f"q{i}" for i in range(0, 40, 5)]
        assert flipped.first.locator("td.answer").nth(1).inner_text() == xss_answer
        # cross-solver: flaky alone 0.800, with the vc system 1.000
        cells = page.locator("table.cross-solver tbody tr").nth(1).locator("td")
        assert [cells.nth(i).inner_text() for i in range(4)] == ["flaky", "0.800", "1.000", "+0.200"]
        for image in page.locator("img").all():
            assert image.evaluate("img => img.complete && img.naturalWidth > 100"), image.get_attribute("src")
        shot = tmp_path / "leaderboard.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert shot.stat().st_size > 10_000
    artifacts = Path(os.environ.get("MARA_TEST_ARTIFACTS", tempfile.gettempdir()))
    artifacts.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, artifacts / "mara-leaderboard-screenshot.png")
