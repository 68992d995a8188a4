"""The command line the rollout-reading scripts share: a run directory in, its ``rollouts/step_*.jsonl`` out."""

from __future__ import annotations

import argparse
from pathlib import Path


def step_files(description: str) -> list[Path]:
    """Parse ``RUN`` from the command line (``description`` heads its help) and return the run's rollout files in
    step order."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("run", type=Path, help="a run directory with rollouts/step_*.jsonl")
    run = parser.parse_args().run
    return sorted((run / "rollouts").glob("step_*.jsonl"), key=lambda path: int(path.stem.split("_")[1]))
