"""Static PNG plots for the leaderboard site (matplotlib, Agg backend): trends over nights and the cross-solver map."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAX_LABEL = 40


@dataclass(frozen=True)
class TrendPoint:
    night: str
    value: float
    ci_low: float | None
    ci_high: float | None


def trend_plot(path: Path, title: str, series: dict[str, list[TrendPoint]], metric: str) -> Path:
    """One line per series (checkpoint · system · protocol) over nights, with 95% CI error bars."""
    nights = sorted({point.night for points in series.values() for point in points})
    position = {night: i for i, night in enumerate(nights)}
    figure, axes = plt.subplots(figsize=(7.5, 3.6), dpi=90)
    for label, points in sorted(series.items()):
        points = sorted(points, key=lambda p: p.night)
        xs = [position[p.night] for p in points]
        ys = [p.value for p in points]
        lower = [p.value - p.ci_low if p.ci_low is not None else 0.0 for p in points]
        upper = [p.ci_high - p.value if p.ci_high is not None else 0.0 for p in points]
        axes.errorbar(xs, ys, yerr=[lower, upper], marker="o", capsize=3, label=_short(label))
    axes.set_xticks(range(len(nights)), [_short(n) for n in nights], rotation=30, ha="right", fontsize=8)
    axes.set_ylabel(metric)
    axes.set_title(_short(title, 80))
    axes.grid(alpha=0.3)
    if series:
        axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(figure, path)


def heat_map(
    path: Path,
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
) -> Path:
    """A rows × columns grid coloured by value (missing cells blank), each cell annotated."""
    figure, axes = plt.subplots(figsize=(1.4 + 1.1 * len(columns), 1.0 + 0.45 * len(rows)), dpi=90)
    grid = [[float("nan") if v is None else v for v in row] for row in values]
    image = axes.imshow(grid, cmap="viridis", aspect="auto", vmin=0.0, vmax=max(1.0, *_finite(grid)))
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            if value is not None:
                axes.text(c, r, f"{value:.3f}", ha="center", va="center", fontsize=8, color="black")
    axes.set_xticks(
        range(len(columns)), [_short(c, 24) for c in columns], rotation=30, ha="right", fontsize=8
    )
    axes.set_yticks(range(len(rows)), [_short(r) for r in rows], fontsize=8)
    axes.set_title(_short(title, 80))
    figure.colorbar(image, ax=axes, fraction=0.04)
    return _save(figure, path)


def _save(figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, bbox_inches="tight")
    plt.close(figure)
    return path


def _finite(grid: list[list[float]]) -> list[float]:
    return [v for row in grid for v in row if v == v] or [1.0]


def _short(text: str, limit: int = MAX_LABEL) -> str:
    """Truncated, with ``$`` escaped so matplotlib never parses a name as math text."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("$", r"\$")
