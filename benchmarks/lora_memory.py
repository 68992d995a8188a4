"""Full weights against one LoRA adapter per role: the trainer's peak memory, update time and a role's size on disk
(a plain script: memory is not a timing).

Each configuration trains in its own process the MarsRL V-C system (three roles) on the toy addition task for
``--steps`` steps from the given base (no cold start), and prints one JSON line: trained parameters, AdamW state
bytes, the process's peak resident memory, the mean update time of the steps after the first, and the size of the
final export (the whole model, or one role's adapter folder).

Run in the checkout: ``PYTHONPATH=. python benchmarks/lora_memory.py --model DIR|tiny [--steps 3] [--r 16]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

RECIPE = {
    "task": {
        "factory": "trainer.tasks.toy:addition_task",
        "args": {"n_prompts": 8, "seed": 0, "total": 7},
        "system": "vc",
        "system_options": {"accept_after": 1, "max_iterations": 1, "solver_attempts": 1},
    },
    "rollout": {"prompts_per_step": 2, "group_size": 4, "max_tokens": 24, "temperature": 0.85},
    "algorithm": {"method": "marsrl", "advantage": "grpo", "kl_coef": 0.0},
    "optim": {"lr": 0.001, "token_budget": 16384},
    "seed": 0,
    "save_every": 0,
}


def folder_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def measure(model: str, lora_rank: int | None, steps: int, run_dir: Path) -> dict:
    """Train one configuration in this process; its figures."""
    import torch

    from trainer.config import TrainConfig, from_dict
    from trainer.run.engine import Trainer

    torch.manual_seed(0)
    model_settings = {"path": None if model == "tiny" else model, "tiny_hidden_size": 64}
    if lora_rank is not None:
        model_settings["lora"] = {"r": lora_rank, "alpha": 2.0 * lora_rank}
    config = from_dict(TrainConfig, {**RECIPE, "model": model_settings, "steps": steps}, "lora_memory")
    trainer = Trainer(config, run_dir)
    updates = [trainer.train_step()["time_update"] for _ in range(steps)]
    trainer.save()
    export = run_dir / "exports" / f"step_{steps}"
    on_disk = export / "adapters" / "solver" if lora_rank is not None else export
    state = trainer.updater.optimizer.state.values()
    return {
        "model": model,
        "weights": "full" if lora_rank is None else f"lora r={lora_rank}",
        "parameters": sum(p.numel() for p in trainer.policy.parameters()),
        "trained_parameters": sum(p.numel() for p in trainer.policy.parameters() if p.requires_grad),
        "adamw_state_mib": sum(t.numel() * t.element_size() for s in state for t in s.values()) / 2**20,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "update_s_mean": sum(updates[1:]) / max(1, len(updates) - 1),
        "role_on_disk_mib": folder_bytes(on_disk) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="a model directory, or tiny (the offline tiny model)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--r", type=int, default=16, help="the adapters' rank")
    parser.add_argument("--one", choices=["full", "lora"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:  # the child process: one configuration
        with tempfile.TemporaryDirectory() as run_dir:
            rank = args.r if args.one == "lora" else None
            print(json.dumps(measure(args.model, rank, args.steps, Path(run_dir))))
        return
    for one in ("full", "lora"):
        command = [
            sys.executable,
            __file__,
            "--model",
            args.model,
            "--steps",
            str(args.steps),
            "--r",
            str(args.r),
        ]
        done = subprocess.run([*command, "--one", one], capture_output=True, text=True, check=True)
        print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
