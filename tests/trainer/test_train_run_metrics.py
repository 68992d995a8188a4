"""What a user reads after a real ``mara train`` run: per-role keys in every metrics row (and TensorBoard), one
curves panel per role, the trajectory dump per step, unscored judgements counted -- over a benchmark task judged
by an OpenAI-compatible grader (the M-ASK recipe's five roles: ``test_e2e_mask.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _fake_grader import FakeGrader

from mara_bench.trainer.run.metrics import read_metrics

ROOT = Path(__file__).resolve().parents[2]
ROLE_KEYS = ("samples", "reward_mean", "adv_nonzero_frac", "loss", "entropy", "response_tokens", "clip_frac")


def mara_train(recipe: Path, out: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "mara_bench.harness.cli", "train", str(recipe), "--out", str(out), *args]
    done = subprocess.run(command, cwd=recipe.parent, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def tensorboard_tags(run: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    return set(events.Tags()["scalars"])


def test_benchmark_run_with_an_llm_grader_reports_roles_rollouts_and_unscored(tmp_path):
    rows = [
        {"id": f"q{i}", "question": f"Who founded company {i}?", "golden_answers": [f"Founder {i}"]}
        for i in range(4)
    ]
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with FakeGrader() as server:
        recipe = tmp_path / "recipe.yaml"
        recipe.write_text(
            "task:\n  benchmark: musique\n  data: train.jsonl\n  split: train\n  judge: simpleqa\n  system: direct\n"
            f"  grader: {{model: openai-api/fake/grader, base_url: '{server.base_url}', api_key: none}}\n"
            "rollout: {prompts_per_step: 2, group_size: 2, max_tokens: 4}\nsteps: 2\nsave_every: 0\n"
        )
        mara_train(recipe, tmp_path / "run")
        assert server.requests >= 8  # every episode judged by the grader
    run = tmp_path / "run"
    records = read_metrics(run)
    for record in records:
        assert {f"role/solver/{key}" for key in ROLE_KEYS} <= set(record), sorted(record)
        assert record["role/solver/samples"] == 4 and record["unscored"] == 0
        assert {"groups_zero_variance_frac", "tool_calls_per_episode"} <= set(record)
    assert "role/solver/reward_mean" in tensorboard_tags(run)
    dump = [json.loads(line) for line in (run / "rollouts" / "step_1.jsonl").read_text().splitlines()]
    assert len(dump) == 2 and all(len(q["episodes"]) == 2 and len(q["samples"]) == 2 for q in dump)
    assert dump[0]["samples"][0]["advantage"] is not None and "reward" in dump[0]["samples"][0]
    assert (run / "curves.png").stat().st_size > 0
