"""Where our trainer's step goes on ``bench_trainer.test_trainer_vs_trl_grpo``'s toy work (issue 37, item 2).

Builds the benchmark's ``eos_prone`` tiny model, runs one unmeasured step, then ``STEPS`` steps under
``cProfile`` on one torch thread: prints the CPU-seconds and tokens per CPU-second, each phase's share of
``time_step`` (``time_sync``, ``time_rollout``, ``time_scoring``, ``time_parity``, ``time_update``) and the
functions with the most cumulative and own time. Run from ``benchmarks/``:
``OMP_NUM_THREADS=1 PYTHONPATH=..:. python profile_trainer_step.py [steps]``.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

import bench_trainer as bench
import torch

import mara_bench.trainer.tasks.toy as toy
from mara_bench.harness.tinymodel import build_tiny_model
from mara_bench.trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
from mara_bench.trainer.run.engine import Trainer


def main(steps: int) -> None:
    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="profile-step-"))
    model, tokenizer = bench.eos_prone_model(build_tiny_model(work / "tiny"))
    model.save_pretrained(work / "eos-prone")
    tokenizer.save_pretrained(work / "eos-prone")
    toy.reply_reward = bench.digit_overlap_reward  # this process only: the benchmark's reward
    config = TrainConfig(
        model=ModelConfig(path=str(work / "eos-prone"), dtype="float32"),
        task=TaskConfig(args=bench.TASK_ARGS),
        rollout=RolloutConfig(
            prompts_per_step=bench.PROMPTS, group_size=bench.GROUP, max_tokens=bench.NEW_TOKENS
        ),
        optim=OptimConfig(lr=bench.LR, grad_clip=1.0),
        steps=steps + 1,
    )
    trainer = Trainer(config, work / "run")
    trainer.train_step()
    profile, cpu = cProfile.Profile(), time.process_time()
    profile.enable()
    metrics = [trainer.train_step() for _ in range(steps)]
    profile.disable()
    cpu = time.process_time() - cpu
    tokens = sum(m["tokens"] for m in metrics)
    print(f"{steps} steps: {cpu:.2f} CPU-s (profiled), {tokens / cpu:,.0f} tokens per CPU-s")
    total = sum(m["time_step"] for m in metrics)
    print(
        ", ".join(f"{p.removeprefix('time_')} {sum(m[p] for m in metrics) / total:.1%}" for p in bench.PHASES)
    )
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
