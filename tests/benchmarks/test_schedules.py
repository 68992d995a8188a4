"""MarsRL throughput schedules (benchmarks/_schedules.py): hand-computed timelines, the staleness bound on
long-tail workloads, every sample trained once, and the recipe fields that choose a schedule."""

import pytest

from benchmarks._schedules import Schedule, long_tail_chains, schedule_from_config, simulate
from mara_bench.trainer.config import ConfigError, TrainConfig, from_dict

CHAINS = [[2, 3], [5, 1]]  # two trajectories: Solver then Verifier decode lengths


def test_synchronous_stages_wait_for_their_longest_call():
    # Solver stage max(2, 5) = 5, Verifier stage max(3, 1) = 3, then 4 samples train at 1 tick each
    report = simulate(CHAINS, Schedule(width=2, batch_size=4))
    assert (report.ticks, report.samples, report.train_steps, report.max_staleness) == (12, 4, 1, 0)


def test_pipeline_hands_each_agent_on_at_once():
    # chain 0: S 0-2, V 2-5; chain 1: S 0-5, V 5-6 -> the 4 samples are queued at 6 and train 6-10
    report = simulate(CHAINS, Schedule(pipeline=True, width=2, batch_size=4))
    assert (report.ticks, report.samples, report.train_steps) == (10, 4, 1)


def test_segment_rollouts_hand_results_on_at_round_ends():
    # rounds of 4 tokens: chain 0 S finishes at 2 -> handed on at 4, V 4-7 -> 8; chain 1 S at 5 -> 8, V 8-9 -> 12
    report = simulate(CHAINS, Schedule(pipeline=True, segment_tokens=4, width=2, batch_size=4))
    assert report.ticks == 12 + 4


@pytest.mark.parametrize("bound", [0, 1, 2])
@pytest.mark.parametrize(
    "options",
    [{}, {"pipeline": True}, {"segment_tokens": 4096}, {"pipeline": True, "segment_tokens": 4096}],
)
def test_the_staleness_bound_holds_and_every_sample_trains_once(bound, options):
    chains = long_tail_chains(200, 3, seed=bound)
    report = simulate(chains, Schedule(max_staleness=bound, width=32, batch_size=32, **options))
    assert report.samples == 600
    assert report.max_staleness <= bound


def test_pipeline_beats_the_synchronous_schedule_on_a_long_tail_at_equal_staleness():
    chains = long_tail_chains(512, 3, seed=0)
    sync = simulate(chains, Schedule(max_staleness=1, width=64, batch_size=192))
    pipeline = simulate(chains, Schedule(pipeline=True, max_staleness=1, width=64, batch_size=192))
    assert pipeline.max_staleness <= 1 and sync.max_staleness <= 1
    assert pipeline.throughput > 1.5 * sync.throughput


def test_recipe_fields_choose_the_schedule_and_bad_values_are_named():
    config = from_dict(
        TrainConfig,
        {
            "task": {"system": "vc"},  # the options now run the real trainer, on MarsRL's V-C chains
            "rollout": {"prompts_per_step": 4, "group_size": 8, "segment_tokens": 16384},
            "algorithm": {"method": "marsrl", "marsrl": {"pipeline": True, "max_staleness": 2}},
        },
    )
    assert schedule_from_config(config) == Schedule(
        pipeline=True, segment_tokens=16384, max_staleness=2, width=32, batch_size=96
    )
    with pytest.raises(ConfigError, match=r"rollout.segment_tokens: must be >= 1, got 0"):
        from_dict(TrainConfig, {"rollout": {"segment_tokens": 0}})
    with pytest.raises(ConfigError, match=r"algorithm.marsrl.max_staleness: must be >= 0, got -1"):
        from_dict(TrainConfig, {"algorithm": {"method": "marsrl", "marsrl": {"max_staleness": -1}}})
