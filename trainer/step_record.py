"""What a step trained on, for a researcher to read: group statistics and the per-step trajectory dump.

* ``zero_variance`` -- the questions' GRPO groups (rows sharing a ``group_key``) whose rewards are all equal: their
  group-normalised advantages are all zero, so they teach nothing. Counted every step
  (``groups_zero_variance_frac``); ``algorithm.filter_zero_variance`` drops their rows before the update.
* ``write_rollouts`` -- ``<run>/rollouts/step_N.jsonl``: one line per question with the item, its Episodes (every
  model and tool call) and the rows trained on them with their rewards and advantages.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample

ROLLOUTS_DIR = "rollouts"


def group_rewards(samples: Sequence[Sample]) -> dict[str, list[float]]:
    """``group_key`` -> the rewards of its rows, in row order."""
    groups: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        groups[sample.group_key].append(sample.reward)
    return dict(groups)


def zero_variance_keys(samples: Sequence[Sample]) -> set[str]:
    """The group keys whose rows all carry the same reward (a group of one included)."""
    return {key for key, rewards in group_rewards(samples).items() if max(rewards) == min(rewards)}


def keep_rows(samples: list[Sample], keep: Callable[[Sample], bool]) -> list[Sample]:
    """The rows ``keep`` accepts, ``parent`` indices remapped to the kept rows (a row whose parent is dropped
    loses its parent link)."""
    kept = [index for index, sample in enumerate(samples) if keep(sample)]
    position = {old: new for new, old in enumerate(kept)}
    rows = []
    for index in kept:
        sample = samples[index]
        sample.parent = position.get(sample.parent) if sample.parent is not None else None
        rows.append(sample)
    return rows


def drop_zero_variance(samples: list[Sample]) -> list[Sample]:
    """The rows outside zero-variance groups (MATPO's workers share their planner's question group, so a
    planner and its workers go together)."""
    flat = zero_variance_keys(samples)
    return keep_rows(samples, lambda sample: sample.group_key not in flat)


def split_rows(samples: Sequence[Sample], sizes: Sequence[int]) -> list[list[Sample]]:
    """The step's joined rows cut back into per-question lists of ``sizes`` rows, ``parent`` local to each list
    again (copies; ``mara_bench.trainer.methods.concatenate`` undone)."""
    groups, start = [], 0
    for size in sizes:
        groups.append(
            [
                dataclasses.replace(s, parent=None if s.parent is None else s.parent - start)
                for s in samples[start : start + size]
            ]
        )
        start += size
    return groups


def sample_record(sample: Sample) -> dict[str, Any]:
    """A trained row as the dump shows it (token ids left out; the Episode holds the text)."""
    return {
        "role": sample.role,
        "group_key": sample.group_key,
        "parent": sample.parent,
        "reward": sample.reward,
        "advantage": sample.advantage,
        "prompt_tokens": len(sample.prompt_ids),
        "response_tokens": len(sample.response_ids),
        "trained_tokens": sum(sample.loss_mask),
    }


def rollouts_path(run_dir: Path, step: int, rank: int) -> Path:
    """``<run>/rollouts/step_N.jsonl`` on rank 0, ``step_N.rank<r>.jsonl`` on the others."""
    suffix = "" if rank == 0 else f".rank{rank}"
    return run_dir / ROLLOUTS_DIR / f"step_{step}{suffix}.jsonl"


def write_rollouts(
    path: Path,
    step: int,
    items: Sequence[dict[str, Any]],
    episodes: Sequence[Sequence[Episode]],
    samples: Sequence[Sequence[Sample]],
    unscored: Sequence[int],
) -> Path:
    """Write one JSON line per question: ``{"step", "item", "episodes", "unscored", "samples"}``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for item, group, rows, dropped in zip(items, episodes, samples, unscored, strict=True):
            record = {
                "step": step,
                "item": item,
                "episodes": [episode.to_dict() for episode in group],
                "unscored": dropped,
                "samples": [sample_record(sample) for sample in rows],
            }
            handle.write(json.dumps(record, default=str) + "\n")
    return path
