"""Observability: each step's metrics reach the JSONL file and TensorBoard with the same values, the curves PNG
is drawn at the end, and a training step reports every metric the issue lists."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.metrics import (
    CURVES_FILE,
    METRICS_FILE,
    TENSORBOARD_DIR,
    MetricsLog,
    plot_curves,
    read_metrics,
)

STEP_METRICS = {
    "reward_mean", "reward_std", "advantage_mean", "advantage_std", "loss", "kl", "entropy", "clip_fraction",
    "grad_norm", "tokens_per_s", "time_sync", "time_rollout", "time_scoring", "time_parity", "time_update",
    "time_step", "padding_share",
}  # fmt: skip


def test_metrics_reach_jsonl_tensorboard_and_png(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = MetricsLog(tmp_path)
    log.write(0, {"step": 0.0, "reward_mean": 0.25, "loss": 1.5})
    log.write(1, {"step": 1.0, "reward_mean": 0.75, "loss": float("nan")})  # NaN: JSONL only
    log.close()
    lines = [json.loads(line) for line in (tmp_path / METRICS_FILE).read_text().splitlines()]
    assert lines[0] == {"step": 0, "reward_mean": 0.25, "loss": 1.5}
    assert lines[1]["reward_mean"] == 0.75

    events = EventAccumulator(str(tmp_path / TENSORBOARD_DIR))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("reward_mean")] == [(0, 0.25), (1, 0.75)]
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(0, 1.5)]

    png = plot_curves(tmp_path)
    assert png == tmp_path / CURVES_FILE
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(header[16:20], "big") == 1280  # 4 panels of 16 inches at 80 dpi


def test_a_role_that_never_had_rows_draws_an_empty_panel_without_a_warning(tmp_path):
    log = MetricsLog(tmp_path)  # a pipelined step can train the Solvers' rows only: the Corrector has none
    for step in range(2):
        log.write(
            step,
            {
                "step": float(step),
                "role/solver/samples": 4.0,
                "role/solver/reward_mean": 0.5,
                "role/corrector/samples": 0.0,
            },
        )
    log.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plot_curves(tmp_path).exists()


def test_a_resumed_run_keeps_the_last_record_per_step(tmp_path):
    log = MetricsLog(tmp_path)
    for step, reward in ((0, 0.1), (1, 0.2), (1, 0.3)):  # step 1 written again after a resume
        log.write(step, {"reward_mean": reward})
    log.close()
    assert [r["reward_mean"] for r in read_metrics(tmp_path)] == [0.1, 0.3]


def test_resuming_drops_the_rows_written_after_the_checkpoint(tmp_path):
    killed = MetricsLog(tmp_path)
    for step in range(4):  # checkpoint at step 2, then steps 2 and 3 logged before the kill
        killed.write(step, {"reward_mean": 0.1 * step})
    killed.close()
    with open(tmp_path / METRICS_FILE, "a") as file:
        file.write('{"step": 4, "rew')  # the kill cut a line
    resumed = MetricsLog(tmp_path, first_step=2)
    for step in (2, 3):
        resumed.write(step, {"reward_mean": 0.5})
    resumed.close()
    rows = [json.loads(line) for line in (tmp_path / METRICS_FILE).read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 1, 2, 3]
    assert [row["reward_mean"] for row in rows] == [0.0, 0.1, 0.5, 0.5]


def test_a_training_step_reports_every_metric(toy_config, tmp_path):
    algorithm = dataclasses.replace(toy_config.algorithm, kl_coef=0.05)
    metrics = Trainer(dataclasses.replace(toy_config, algorithm=algorithm), tmp_path).train_step()
    assert metrics.keys() >= STEP_METRICS
    parts = ("time_sync", "time_rollout", "time_scoring", "time_parity", "time_update")
    assert metrics["time_step"] == pytest.approx(sum(metrics[part] for part in parts), rel=1e-6)
    assert metrics["tokens_per_s"] == pytest.approx(metrics["tokens"] / metrics["time_step"])
