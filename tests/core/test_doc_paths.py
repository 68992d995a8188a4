"""Every file or folder of the checkout that README.md and docs/*.md name in backticks exists (a path that starts
with one of the checkout's folders; ``<placeholders>``, globs and outputs such as ``runs/...`` are not paths of
the checkout)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FOLDERS = (
    "core",
    "harness",
    "judges",
    "trainer",
    "leaderboards",
    "tasks",
    "tests",
    "benchmarks",
    "docs",
    "scripts",
)
CODE = re.compile(r"`([^`\s]+)`")


def named_paths(text: str) -> set[str]:
    """The checkout paths among ``text``'s backticked words (a trailing ``@task`` or ``:name`` dropped)."""
    found = set()
    for word in CODE.findall(text):
        path = re.split(r"[@:]", word)[0].rstrip(".,;")
        if path.split("/")[0] in FOLDERS and "/" in path and not re.search(r"[<>*{}$]", path):
            found.add(path)
    return found


def test_named_paths_finds_paths_and_skips_the_rest():
    text = "`tasks/aime.py@aime2025`, `core/`, `runs/x`, `trainer/recipes/<method>-paper.yaml`, `mara train`"
    assert named_paths(text) == {"tasks/aime.py", "core/"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_every_path_a_doc_names_exists(doc):
    missing = sorted(
        path for path in named_paths(doc.read_text(encoding="utf-8")) if not (ROOT / path).exists()
    )
    assert missing == [], f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"
