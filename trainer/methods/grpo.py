"""Plain GRPO: every call of an episode is trained under the episode's outcome reward (``task.reward``), and
rows are normalised within their question's group (the ``grpo-toy`` recipe; any system)."""

from __future__ import annotations

from typing import Any

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.trainer.methods.base import Method, concatenate, question_id
from mara_bench.trainer.samples import samples_from_episode


def rewarded_samples(
    item: dict[str, Any], episodes: list[Episode], task: Any, tokenizer: Any
) -> list[Sample]:
    """Each episode's samples with its outcome reward, all keyed by the question."""
    return concatenate(
        [
            samples_from_episode(
                episode, tokenizer, group_key=question_id(item), reward=float(task.reward(item, episode))
            )
            for episode in episodes
        ]
    )


METHOD = Method(name="grpo", rewarded_samples=rewarded_samples)
