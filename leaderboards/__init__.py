"""Nightly regression leaderboards: collect Inspect logs, store history, compare runs, render a static site."""
