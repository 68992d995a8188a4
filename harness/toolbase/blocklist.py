"""The leak blocklist: web results and pages that may hold benchmark questions or answers are dropped.

A pattern is ``host`` or ``host/path-prefix`` (case-insensitive). ``host`` matches that host and its subdomains
(``chegg.com`` blocks ``www.chegg.com``); a path prefix matches whole path segments
(``huggingface.co/datasets`` blocks ``/datasets/cais/hle`` but not ``/datasetsfoo``). Configure it with the
``blocklist`` tool setting: a list (or comma-separated string) that replaces the defaults; include
``DEFAULT_BLOCKLIST`` to extend them.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

DEFAULT_BLOCKLIST: tuple[str, ...] = (
    # dataset hubs: the benchmarks themselves, with their answers
    "huggingface.co/datasets",
    "hf.co/datasets",
    "huggingface.co/spaces/gaia-benchmark",
    "kaggle.com/datasets",
    "paperswithcode.com/dataset",
    "modelscope.cn/datasets",
    # the benchmarks' own pages and repositories
    "lastexam.ai",
    "agi.safe.ai",
    "github.com/centerforaisafety/hle",
    "github.com/google-research-datasets/frames",
    "github.com/alibaba-nlp/webagent",
    "github.com/ruc-nlpir/flashrag",
    "github.com/bytedance-seed/beyondaime",
    # answer-sharing sites
    "chegg.com",
    "coursehero.com",
    "quizlet.com",
    "brainly.com",
    "studocu.com",
    "numerade.com",
    "bartleby.com",
    "scribd.com",
)


def _split(target: str) -> tuple[str, str]:
    """``(host without www., path)`` of a URL or of a ``host/path`` pattern, lower-cased."""
    target = target.strip().lower()
    parts = urlsplit(target if "://" in target else "//" + target)
    host = (parts.hostname or "").removeprefix("www.")
    return host, parts.path.rstrip("/")


class Blocklist:
    """Compiled blocklist patterns; ``blocks(url)`` says whether a URL falls under one of them."""

    def __init__(self, patterns: Iterable[str] = DEFAULT_BLOCKLIST):
        self.patterns = tuple(pattern for pattern in patterns if pattern.strip())
        self._rules = [_split(pattern) for pattern in self.patterns]
        for pattern, (host, _) in zip(self.patterns, self._rules, strict=True):
            if not host:
                raise ValueError(f"blocklist pattern {pattern!r} has no host; write host or host/path")

    def blocks(self, url: str) -> bool:
        host, path = _split(url)
        return any(
            (host == rule_host or host.endswith("." + rule_host))
            and (path == rule_path or path.startswith(rule_path + "/"))
            for rule_host, rule_path in self._rules
        )
