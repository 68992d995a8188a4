"""Zero-variance groups are counted and, when asked, dropped with their parents remapped; MPTs are masked only on
positive rows above the probability threshold."""

from __future__ import annotations

import math

import torch

from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.mastered_tokens import mastered_positive_tokens
from mara_bench.trainer.step_record import drop_zero_variance, zero_variance_keys


def row(key: str, reward: float, parent=None) -> Sample:
    return Sample([1], [2], [1], role="planner", group_key=key, reward=reward, parent=parent)


def test_zero_variance_groups_are_found_and_dropped_with_parents_remapped():
    samples = [row("q1", 1.0), row("q1", 1.0), row("q2", 0.0), row("q2", 1.0), row("q2", 1.0, parent=2)]
    assert zero_variance_keys(samples) == {"q1"}
    kept = drop_zero_variance(samples)
    assert [s.group_key for s in kept] == ["q2", "q2", "q2"]
    assert kept[2].parent == 0  # was row 2, now row 0


def test_mastered_positive_tokens_only_on_positive_rows_above_the_threshold():
    logprobs = torch.tensor([math.log(0.995), math.log(0.5), math.log(0.99)])
    assert mastered_positive_tokens(logprobs, 1.0, 0.99).tolist() == [True, False, True]
    assert mastered_positive_tokens(logprobs, -1.0, 0.99).tolist() == [False, False, False]
