"""The sample plumbing every method shares: joining per-question lists, the lead/helper layout of MARS and MATPO
episodes (and its clear error), and training a Corrector's final reply only."""

from __future__ import annotations

import pytest

from mara_bench.core.samples import Sample
from mara_bench.trainer.methods.base import concatenate, lead_then_helpers, train_final_reply_only


def row(role: str, parent: int | None = None, mask: list[int] | None = None) -> Sample:
    mask = mask or [1]
    return Sample(prompt_ids=[1], response_ids=[2] * len(mask), loss_mask=mask, role=role, parent=parent)


def test_concatenate_offsets_each_lists_parents_and_leaves_the_inputs_alone():
    first, second = [row("planner"), row("worker", parent=0)], [row("planner"), row("worker", parent=0)]
    joined = concatenate([first, second])
    assert [s.parent for s in joined] == [None, 0, None, 2]
    assert second[1].parent == 0


def test_lead_then_helpers_puts_the_lead_first_and_hangs_the_helpers_off_it():
    samples = [row("worker", parent=None), row("planner"), row("worker", parent=None), row("other")]
    ordered = lead_then_helpers(samples, "planner", "worker", system="matpo")
    assert ordered == [samples[1], samples[0], samples[2]]
    assert [s.parent for s in ordered] == [None, 0, 0]


@pytest.mark.parametrize("leads", [0, 2])
def test_an_episode_without_exactly_one_lead_sample_names_the_system(leads):
    samples = [row("system2") for _ in range(leads)] + [row("system1")]
    with pytest.raises(
        ValueError,
        match=rf"one system2 sample .*got {leads}: is the episode from mara_bench.harness.systems.mars",
    ):
        lead_then_helpers(samples, "system2", "system1", system="mars")


def test_only_the_trailing_run_of_trained_tokens_keeps_the_loss():
    replayed = row("corrector", mask=[1, 1, 0, 0, 1, 1, 1])
    assert train_final_reply_only(replayed).loss_mask == [0, 0, 0, 0, 1, 1, 1]
    truncated = row("corrector", mask=[1, 1, 0])  # no reply tokens at all: nothing is trained
    assert train_final_reply_only(truncated).loss_mask == [0, 0, 0]
