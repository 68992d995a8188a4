"""Training metrics: one JSON line per step, the same scalars to TensorBoard, and a PNG of the curves at the end."""

from __future__ import annotations

import json
import math
from pathlib import Path

METRICS_FILE = "metrics.jsonl"
CURVES_FILE = "curves.png"
TENSORBOARD_DIR = "tensorboard"
PLOTTED = (
    "reward_mean",
    "loss",
    "entropy",
    "kl",
    "clip_fraction",
    "grad_norm",
    "rollout/logprob_gap_mean",
    "rollout/logprob_gap_max",
    "tokens_per_s",
    "time_step",
    "heldout/answer_accuracy",
    "heldout/verifier_precision",
)


class MetricsLog:
    """Appends each step's metrics to ``<run>/metrics.jsonl`` and ``<run>/tensorboard``.

    ``first_step``: the step the run goes on from (the resumed checkpoint's); rows the file holds for it and later
    steps (written after that checkpoint by a run that was then killed), and a half-written last line, are
    dropped first, so each step has one row."""

    def __init__(self, run_dir: str | Path, first_step: int = 0):
        from torch.utils.tensorboard import SummaryWriter

        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        _keep_steps_before(self.run_dir / METRICS_FILE, first_step)
        self._file = open(self.run_dir / METRICS_FILE, "a")  # noqa: SIM115 -- closed in close()
        self._writer = SummaryWriter(str(self.run_dir / TENSORBOARD_DIR))

    def write(self, step: int, metrics: dict[str, float]) -> None:
        self._file.write(
            json.dumps({"step": step, **{k: v for k, v in metrics.items() if k != "step"}}) + "\n"
        )
        self._file.flush()
        for name, value in metrics.items():
            if name != "step" and math.isfinite(value):
                self._writer.add_scalar(name, value, step)

    def close(self) -> None:
        self._file.close()
        self._writer.close()


def _keep_steps_before(path: Path, first_step: int) -> None:
    """Rewrite ``path`` (atomically) with only its whole rows of steps before ``first_step``."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the half-written line of a killed run
        if isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] < first_step:
            kept.append(line + "\n")
    partial = path.with_name(f".{path.name}.rewrite")
    partial.write_text("".join(kept))
    partial.replace(path)


def read_metrics(run_dir: str | Path) -> list[dict[str, float]]:
    """The run's metric records, the last one per step (a resumed run rewrites the steps after its checkpoint)."""
    path = Path(run_dir) / METRICS_FILE
    by_step = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        by_step[record["step"]] = record
    return [by_step[step] for step in sorted(by_step)]


ROLE_PLOTTED = ("reward_mean", "adv_nonzero_frac", "clip_frac", "rollout/logprob_gap_mean")
"""The per-role keys drawn in each role's panel (``role/<role>/<key>``); its entropy goes on a right-hand axis."""


def roles_in(records: list[dict[str, float]]) -> list[str]:
    """The roles with ``role/<role>/...`` keys in the records, in first-seen order."""
    roles: dict[str, None] = {}
    for record in records:
        for name in record:
            if name.startswith("role/"):
                roles[name.split("/")[1]] = None
    return list(roles)


def _draw(axis, records: list[dict[str, float]], name: str, **style) -> None:
    """One metric's points over the steps, labelled with its last path part."""
    points = [(r["step"], r[name]) for r in records if name in r]
    if points:
        label = name.rsplit("/", 1)[-1]
        axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=label, **style)
        if "color" in style:
            axis.set_ylabel(label, color=style["color"])


def plot_curves(run_dir: str | Path) -> Path:
    """Draw the run's curves to ``<run>/curves.png``: one panel per plotted metric present, then one panel per
    role with that role's reward mean, share of rows with a non-zero advantage and clip fraction (and its entropy,
    dashed, on the right-hand axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(run_dir)
    names = [n for n in PLOTTED if any(n in r for r in records)]
    roles = roles_in(records)
    columns = 4
    panels = len(names) + len(roles)
    lines = max(1, math.ceil(panels / columns))
    figure, axes = plt.subplots(lines, columns, figsize=(16, 3.5 * lines))
    flat = list(getattr(axes, "flat", [axes]))
    series = [(name, [name]) for name in names] + [
        (f"role {role}", [f"role/{role}/{key}" for key in ROLE_PLOTTED]) for role in roles
    ]
    for axis, (title, keys) in zip(flat, series, strict=False):
        for name in keys:
            _draw(axis, records, name)
        axis.set_title(title)
        axis.set_xlabel("step")
        if title.startswith("role "):
            _draw(axis.twinx(), records, f"role/{title[5:]}/entropy", linestyle="--", color="gray")
            if axis.get_legend_handles_labels()[0]:  # a role that never had rows has nothing to label
                axis.legend(fontsize="small")
    for axis in flat[len(series) :]:
        axis.axis("off")
    figure.tight_layout()
    out = Path(run_dir) / CURVES_FILE
    figure.savefig(out, dpi=80)
    plt.close(figure)
    return out
