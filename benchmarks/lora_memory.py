"""Full weights against one LoRA adapter per role: the trainer's peak memory and update time, and a role's size on
disk (a plain script: memory is not a timing).

Each configuration runs in its own process: the policy of a MarsRL V-C recipe (three roles: solver, verifier,
corrector) is loaded from the given base, full or with one adapter per role, and makes ``--steps`` updates
(``mara_bench.trainer.learner.update.PolicyUpdate``) on the same fixed rows -- ``--rows`` rows of a 64-token prompt and a
``--response``-token response, the roles in turn, rewards differing within each group -- without rollouts, so the
figures are the update's. It prints one JSON line: parameters, trained parameters, AdamW state, the process's peak
resident memory, the mean update time after the first, and the size of what one role's export costs on disk.

Run in the checkout: ``PYTHONPATH=. python benchmarks/lora_memory.py --model DIR|tiny [--steps 3] [--r 16]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROLES = ("solver", "verifier", "corrector")
RECIPE = {
    "task": {
        "factory": "mara_bench.trainer.tasks.toy:addition_task",
        "args": {"n_prompts": 8, "total": 7},
        "system": "vc",
    },
    "algorithm": {"method": "marsrl", "advantage": "grpo", "kl_coef": 0.0},
    "optim": {"lr": 0.001, "token_budget": 4096},
    "seed": 0,
}


def fixed_rows(count: int, response: int, vocab: int) -> list:
    """``count`` rows in groups of two, the roles in turn, with different rewards inside each group."""
    import torch

    from mara_bench.core.samples import Sample

    draw = torch.Generator().manual_seed(0)
    return [
        Sample(
            prompt_ids=torch.randint(3, vocab, (64,), generator=draw).tolist(),
            response_ids=torch.randint(3, vocab, (response,), generator=draw).tolist(),
            loss_mask=[1] * response,
            role=ROLES[(row // 2) % len(ROLES)],
            group_key=f"q{row // 2}",
            reward=float(row % 2),
        )
        for row in range(count)
    ]


def folder_mib(path: Path) -> float:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file()) / 2**20


def measure(model: str, lora_rank: int | None, steps: int, rows: int, response: int, run_dir: Path) -> dict:
    """Load one configuration's policy in this process and update it ``steps`` times; its figures."""
    from mara_bench.harness.systems.vc import ROLES as VC_ROLES
    from mara_bench.trainer.config import TrainConfig, from_dict
    from mara_bench.trainer.learner.distributed import Distributed
    from mara_bench.trainer.learner.models import load_models
    from mara_bench.trainer.learner.update import PolicyUpdate
    from mara_bench.trainer.methods import get_method
    from mara_bench.trainer.run.engine import adapter_plan
    from mara_bench.trainer.run.run_state import export

    assert tuple(VC_ROLES) == ROLES
    settings = {"path": None if model == "tiny" else model, "tiny_hidden_size": 64}
    if lora_rank is not None:
        settings["lora"] = {"r": lora_rank, "alpha": 2.0 * lora_rank}
    recipe = {**RECIPE, "model": settings, "rollout": {"prompts_per_step": rows // 2, "group_size": 2}}
    config = from_dict(TrainConfig, recipe, "lora_memory")
    dist = Distributed.from_env(config.parallel)
    models = load_models(
        config.model,
        run_dir,
        dist,
        None,
        seed=config.seed,
        reference=config.algorithm.kl_coef > 0,
        critic=False,
        adapters=adapter_plan(config),
    )
    method = get_method(config.algorithm.method).configured(config.algorithm)
    update = PolicyUpdate(
        config.algorithm, config.optim, config.rollout, dist, method, list(ROLES), models.policy, None, None
    )
    samples = fixed_rows(rows, response, models.tokenizer.vocab_size)
    times = []
    for step in range(steps):
        started = time.perf_counter()
        update(samples, step)
        times.append(time.perf_counter() - started)
    out = run_dir / "export"
    export(models, out, models.policy.state_dict())
    state = [t for s in update.optimizer.state.values() for t in s.values() if hasattr(t, "numel")]
    return {
        "model": model,
        "weights": "full" if lora_rank is None else f"lora r={lora_rank}",
        "parameters": sum(p.numel() for p in models.policy.parameters()),
        "trained_parameters": sum(p.numel() for p in models.policy.parameters() if p.requires_grad),
        "adamw_state_mib": round(sum(t.numel() * t.element_size() for t in state) / 2**20, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "update_s_mean": round(sum(times[1:]) / max(1, len(times) - 1), 2),
        "role_on_disk_mib": round(folder_mib(out / "adapters" / "solver" if lora_rank else out), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny", help="a model directory, or tiny (the offline tiny model)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--r", type=int, default=16, help="the adapters' rank")
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--response", type=int, default=64)
    parser.add_argument("--one", choices=["full", "lora"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:  # the child process: one configuration
        with tempfile.TemporaryDirectory() as run_dir:
            rank = args.r if args.one == "lora" else None
            print(json.dumps(measure(args.model, rank, args.steps, args.rows, args.response, Path(run_dir))))
        return
    shared = ["--model", args.model, "--steps", str(args.steps), "--r", str(args.r), "--rows", str(args.rows)]
    for one in ("full", "lora"):
        command = [sys.executable, __file__, *shared, "--response", str(args.response), "--one", one]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
