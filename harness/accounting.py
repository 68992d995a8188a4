"""What one question cost (MARS table 6; M-ASK's stated cost limitation): tokens by role, tool calls by tool, pages
and papers read, python calls and, when every model that answered has a price, US dollars.

``account(episode, roles, tools, prices)`` counts an Episode. The system solver puts those counts on each sample as
its ``accounting`` score (``record_account``), and Inspect reports them with the metrics of the registered
``accounting`` scorer (the mean per attempt, one attempt being one question in one epoch, and totals over the whole
eval), next to the judge's scores. The solver writes the score itself, where the Episode is at hand: a scorer of
its own cost every sample a scorer span (two more events) and a pass over the stored Episode. The registered
scorer itself lives above the systems (``mara_bench.harness.accounting_scorer``), which import this module.

A page read is a ``browse`` call that returned text (MARS reads result pages that way; react and MATPO's worker
browse themselves); one that read a ``scholar`` result counts as a paper (table 6's "Papers") instead. Prices live in ``harness/prices.yaml`` (US dollars per million input / output tokens by model
name), a small table to edit; a model without an entry leaves ``cost_usd`` blank (NaN), never zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from inspect_ai.scorer import Metric, SampleScore, Score, Value, metric
from inspect_ai.solver import TaskState

if TYPE_CHECKING:
    from mara_bench.core.episodes import Episode

ACCOUNTING_SCORE = "accounting"
"""The name of the score that carries what a question cost (and of the scorer whose metrics report it)."""
PRICES_FILE = Path(__file__).resolve().with_name("prices.yaml")
PAGE_TOOL = "browse"
PAPER_SOURCE = "scholar"
PYTHON_TOOL = "python"
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float


def load_prices(path: Path = PRICES_FILE) -> dict[str, Price]:
    """The price table: ``{model: {input: $/M, output: $/M}}``; a malformed entry fails naming the file and key."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    prices = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise ValueError(
                f"{path}: entry {model!r} must be {{input: <$ per million tokens>, output: <$ per million tokens>}}"
            )
        prices[str(model)] = Price(float(entry["input"]), float(entry["output"]))
    return prices


@cache
def default_prices() -> dict[str, Price]:
    return load_prices()


def price_of(model: str | None, prices: Mapping[str, Price]) -> Price | None:
    """The entry for ``model`` by its exact name, without its provider prefix, or without a dated snapshot suffix."""
    if not model:
        return None
    bare = model.split("/", 1)[-1]
    for name in (model, bare, _SNAPSHOT.sub("", bare)):
        if name in prices:
            return prices[name]
    return None


def account_keys(roles: Sequence[str], tools: Sequence[str]) -> list[str]:
    """The metric names ``account`` reports for a system with these roles and tools."""
    by_role = [f"{kind}_tokens_{role}" for role in roles for kind in ("input", "output")]
    by_tool = [f"tool_calls_{tool}" for tool in tools]
    return [
        "input_tokens",
        "output_tokens",
        *by_role,
        "tool_calls",
        *by_tool,
        "pages_read",
        "papers_read",
        "python_calls",
        "cost_usd",
    ]


def account(
    episode: Episode, roles: Sequence[str], tools: Sequence[str], prices: Mapping[str, Price]
) -> dict[str, float]:
    """The counts of ``account_keys(roles, tools)`` for one Episode."""
    counts: dict[str, float] = dict.fromkeys(account_keys(roles, tools), 0)
    cost = 0.0
    for call in episode.calls:
        reply = call.reply
        counts["input_tokens"] += reply.input_tokens
        counts["output_tokens"] += reply.output_tokens
        for kind, tokens in (("input", reply.input_tokens), ("output", reply.output_tokens)):
            key = f"{kind}_tokens_{call.role}"
            if key in counts:
                counts[key] += tokens
        price = price_of(reply.model, prices)
        cost = (
            math.nan
            if price is None
            else cost + (reply.input_tokens * price.input + reply.output_tokens * price.output) / 1e6
        )
    for tool_call in episode.tool_calls:
        counts["tool_calls"] += 1
        if f"tool_calls_{tool_call.name}" in counts:
            counts[f"tool_calls_{tool_call.name}"] += 1
        if tool_call.name == PAGE_TOOL and tool_call.error is None:
            counts["papers_read" if tool_call.origin == PAPER_SOURCE else "pages_read"] += 1
        if tool_call.name == PYTHON_TOOL:
            counts["python_calls"] += 1
    counts["cost_usd"] = cost if episode.calls else math.nan
    return counts


def idle_parts(metrics: Mapping[str, float]) -> list[str]:
    """What never ran in a whole eval, from its ``accounting`` metrics (means per attempt): each agent role that
    never read a token (the Verifier when no Solver wrote a solution) and each tool never called, so a 0 that
    comes from a part that never ran says so instead of passing as a measured 0."""
    idle = []
    for key, value in metrics.items():
        if key.startswith("input_tokens_") and value == 0:
            idle.append(f"role {key.removeprefix('input_tokens_')} never ran")
        elif key.startswith("tool_calls_") and value == 0:
            idle.append(f"tool {key.removeprefix('tool_calls_')} was never called")
    return idle


TOTALLED_KEYS = ("input_tokens", "output_tokens", "tool_calls", "cost_usd")
"""The quantities also reported summed over every attempt of the eval, as ``total_<key>``, with the tool cache's
counts (``mara_bench.harness.toolcache.counts.COUNT_KEYS``)."""


@dataclass
class _Tally:
    """Running sums over the attempts seen so far, in the order Inspect passes them."""

    seen: list[Score] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=dict)
    known_sums: dict[str, float] = field(default_factory=dict)
    known_counts: dict[str, int] = field(default_factory=dict)
    attempts: int = 0

    def extends(self, scores: Sequence[SampleScore]) -> bool:
        """Whether ``scores`` starts with the very scores already counted (Inspect appends finished attempts)."""
        return len(scores) >= len(self.seen) and all(
            new.score is old for new, old in zip(scores, self.seen, strict=False)
        )

    def add(self, score: Score) -> None:
        self.seen.append(score)
        if not isinstance(score.value, dict):
            return
        self.attempts += 1
        for key, raw in score.value.items():
            number = float(raw)
            self.totals[key] = self.totals.get(key, 0.0) + number
            if not math.isnan(number):
                self.known_sums[key] = self.known_sums.get(key, 0.0) + number
                self.known_counts[key] = self.known_counts.get(key, 0) + 1


@metric(scores="unreduced")
def per_attempt_means_and_totals() -> Metric:
    """Every counted quantity's mean per attempt, and ``total_<key>`` sums over all attempts for ``TOTALLED_KEYS``.

    An attempt is one question in one epoch: with ``--epochs k`` each of the k runs of a question was paid for, so
    the metric takes the unreduced scores (one per question per epoch) and never the epoch reducer's mean/mode/max,
    which would make a cost look like a correctness score. A mean leaves out NaN values (an unpriced model's cost);
    a quantity no attempt has is NaN, and a total is NaN as soon as one attempt's value is unknown.

    Inspect recomputes the metrics about once a second over every attempt so far; the sums are kept between calls
    and only the attempts appended since the last call are read. Any other list (a replaced score, another eval)
    is counted from the start.
    """
    tally = _Tally()

    def compute(scores: list[SampleScore]) -> Value:
        from mara_bench.harness.toolcache.counts import (
            COUNT_KEYS,  # not at import: the package loads the tool settings
        )

        nonlocal tally
        # a local name: another eval's call may swap ``tally`` meanwhile
        counted = tally if tally.extends(scores) else _Tally()
        for sample_score in scores[len(counted.seen) :]:
            counted.add(sample_score.score)
        tally = counted
        sums, counts = counted.known_sums, counted.known_counts
        result: dict[str, float] = {
            key: sums[key] / counts[key] if key in counts else math.nan for key in counted.totals
        }
        for key in (*TOTALLED_KEYS, *COUNT_KEYS):
            if key in counted.totals:
                result[f"total_{key}"] = counted.totals[key]
        result["attempts"] = counted.attempts
        return result

    return compute


def record_account(
    state: TaskState,
    episode: Episode,
    roles: Sequence[str],
    tools: Sequence[str],
    extra: Mapping[str, float] | None = None,
) -> None:
    """Put ``account`` of ``episode`` (plus the ``extra`` counts, e.g. the tool cache's) on the sample as its
    ``accounting`` score (one score event, no scorer span)."""
    if state.scores is None:
        state.scores = {}
    value = {**account(episode, roles, tools, default_prices()), **(extra or {})}
    state.scores[ACCOUNTING_SCORE] = Score(value=value)
