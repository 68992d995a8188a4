"""Checkpoints: a process killed mid-write leaves the previous one loadable; exports load with transformers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import torch

from mara_bench.trainer.run.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from mara_bench.trainer.run.cli import main as train_main

_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import torch
    from mara_bench.trainer.run.checkpoint import save_checkpoint

    def slow_export(directory):
        (Path(directory) / "model.safetensors").write_bytes(b"partial")
        print("writing", flush=True)
        time.sleep(60)

    save_checkpoint(sys.argv[1], 2, {"weights": torch.full((3,), 2.0)}, export=slow_export)
    """
)


def test_killed_write_leaves_previous_checkpoint_loadable(tmp_path):
    save_checkpoint(
        tmp_path, 1, {"weights": torch.full((3,), 1.0)}, export=lambda d: (d / "config.json").write_text("{}")
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    assert writer.stdout.readline().strip() == "writing"  # step 2's state is written, its export half-way
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    latest = latest_checkpoint(tmp_path)
    assert latest == tmp_path / "checkpoints" / "step_1"
    state = load_checkpoint(latest)
    assert state["step"] == 1 and torch.equal(state["weights"], torch.full((3,), 1.0))
    assert not (tmp_path / "exports" / "step_2").exists()  # the half-written export never took the final name
    assert sorted(p.name for p in (tmp_path / "exports").iterdir() if not p.name.startswith(".")) == [
        "step_1"
    ]


def test_the_next_save_removes_what_a_killed_trainer_left_half_written(tmp_path):
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    assert writer.stdout.readline().strip() == "writing"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    killed = tmp_path / "exports" / f".tmp-step_2-{writer.pid}"
    assert killed.is_dir()
    running = tmp_path / "exports" / f".tmp-step_9-{os.getppid()}"  # a live process's write in progress
    running.mkdir()
    save_checkpoint(
        tmp_path, 3, {"weights": torch.zeros(1)}, export=lambda d: (d / "config.json").write_text("{}")
    )
    assert not killed.exists() and running.is_dir()
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == [running.name, "step_3"]


def test_marker_moves_only_after_a_complete_save(tmp_path):
    assert latest_checkpoint(tmp_path) is None
    save_checkpoint(tmp_path, 1, {"x": 1})
    save_checkpoint(tmp_path, 2, {"x": 2})
    assert (tmp_path / "checkpoints" / "latest").read_text() == "step_2"
    assert load_checkpoint(latest_checkpoint(tmp_path))["x"] == 2


def test_cli_run_exports_a_model_transformers_loads(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        f"model: {{path: {tiny_model_dir}}}\n"
        "task: {args: {n_prompts: 8}}\n"
        "rollout: {prompts_per_step: 4, group_size: 8, max_tokens: 8}\n"
        "steps: 2\nsave_every: 1\n"
        # weight decay moves the weights even when every sampled reply of the untrained model scores 0
        "optim: {weight_decay: 0.1}\n"
    )
    run = tmp_path / "run"
    assert train_main([str(recipe), "--out", str(run)]) == 0
    assert sorted(p.name for p in (run / "exports").iterdir()) == ["step_1", "step_2"]
    assert (run / "checkpoints" / "latest").read_text() == "step_2"
    assert (run / "curves.png").stat().st_size > 0
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 2
    exported = AutoModelForCausalLM.from_pretrained(run / "exports" / "step_2")
    trained = load_checkpoint(run / "checkpoints" / "step_2")["model"]
    for name, tensor in exported.state_dict().items():
        assert torch.equal(tensor, trained[name]), name
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir).state_dict()
    assert any(not torch.equal(base[n], t) for n, t in exported.state_dict().items())  # it did train
    assert AutoTokenizer.from_pretrained(run / "exports" / "step_2").chat_template


def test_cli_resume_continues_after_the_last_checkpoint(tiny_model_dir, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        f"model: {{path: {tiny_model_dir}}}\ntask: {{args: {{n_prompts: 8}}}}\n"
        "rollout: {prompts_per_step: 2, group_size: 2, max_tokens: 4}\nsteps: 3\nsave_every: 1\n"
    )
    run = tmp_path / "run"
    assert train_main([str(recipe), "--out", str(run), "--steps", "2"]) == 0
    assert (run / "checkpoints" / "latest").read_text() == "step_2"
    assert train_main([str(recipe), "--out", str(run), "--resume"]) == 0
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [0, 1, 2]  # the resumed run did only the missing step
    assert (run / "checkpoints" / "latest").read_text() == "step_3"
