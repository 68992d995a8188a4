"""A short run with one LoRA adapter per role, and what it must show: every trained role's adapter changing in RL,
the base's and every frozen adapter's weights not changing (a plain script: a training run with its checks).

It loads ``RECIPE`` with the per-role adapters of ``--adapters`` (as ``mara train --adapters``) and the ``--set``
overrides, runs the cold start, then ``--steps`` RL steps (each step's metrics to ``<out>/metrics.jsonl``, as
``mara train``), saves the export, and writes ``<out>/adapter_checks.json``: per adapter its sha256 after the
cold start and after RL, whether it trains, and the sum of its RL steps' weight changes; the base's sha256 before
the cold start, after RL, and of the base the export names (its ``base.json``) loaded afresh. It prints one line per step (per role: rows,
rows with a non-zero advantage, the step's adapter change, the rollout-trainer logprob gap) and exits 1 when a
check fails.

Run in the checkout: ``PYTHONPATH=. python benchmarks/role_adapter_run.py RECIPE --adapters FILE --out RUN
[--steps 3] [--set optim.token_budget=1024 ...]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml


def overridden(data: dict, assignments: list[str]) -> dict:
    """``data`` with each ``dotted.key=value`` of ``assignments`` set (the value read as YAML)."""
    for assignment in assignments:
        key, _, value = assignment.partition("=")
        *path, last = key.split(".")
        section = data
        for part in path:
            section = section[part]
        section[last] = yaml.safe_load(value)
    return data


def step_line(step: int, metrics: dict[str, float], roles: list[str]) -> str:
    """One step's per-role figures."""
    parts = [f"step {step}: reward {metrics.get('reward_mean', float('nan')):.3f}"]
    for role in roles:
        rows = metrics.get(f"role/{role}/samples", 0)
        signal = metrics.get(f"role/{role}/adv_nonzero_frac", 0.0)
        change = metrics.get(f"role/{role}/adapter_update", 0.0)
        gap = metrics.get(f"role/{role}/rollout/logprob_gap_mean", float("nan"))
        parts.append(f"{role} rows {rows:g} adv!=0 {signal:.2f} update {change:.4f} gap {gap:.1e}")
    return "; ".join(parts)


def main() -> int:
    from transformers import AutoModelForCausalLM

    from mara_bench.trainer.config import TrainConfig, from_dict, load_config, to_dict
    from mara_bench.trainer.learner.adapters import BASE_FILE, adapter_sha256, base_sha256
    from mara_bench.trainer.run.cli import with_adapters
    from mara_bench.trainer.run.engine import Trainer
    from mara_bench.trainer.run.metrics import MetricsLog

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe")
    parser.add_argument(
        "--adapters", required=True, help="the per-role adapters file (mara train --adapters)"
    )
    parser.add_argument("--out", required=True, help="the run directory")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], help="dotted.key=value (YAML), repeatable")
    args = parser.parse_args()
    data = to_dict(with_adapters(load_config(args.recipe), args.adapters))
    data = overridden({**data, "steps": args.steps, "save_every": 0}, args.set)
    config = from_dict(TrainConfig, data, " ".join(args.set) or args.recipe)
    run_dir = Path(args.out)
    started = time.perf_counter()
    trainer = Trainer(config, run_dir)
    policy, plan = trainer.policy, trainer.models.adapters
    assert plan is not None, "the recipe has no model.lora"
    base = base_sha256(policy)
    trainer.warm_up()
    warmed = {name: adapter_sha256(policy, name) for name in plan.names}
    log = MetricsLog(run_dir)
    # a shared adapter's change is reported under each of its roles: count it once, under its first
    first_role = {name: role for role, name in reversed(plan.adapters.items())}
    moved = dict.fromkeys(plan.names, 0.0)
    for step in range(args.steps):
        metrics = trainer.train_step()
        log.write(step, metrics)
        print(step_line(step, metrics, trainer.roles), flush=True)
        for name, role in first_role.items():
            moved[name] += metrics.get(f"role/{role}/adapter_update", 0.0)
    log.close()
    trainer.save()
    export = json.loads((run_dir / "exports" / f"step_{trainer.step}" / BASE_FILE).read_text())
    reloaded = base_sha256(AutoModelForCausalLM.from_pretrained(export["base"]))
    adapters = {
        name: {
            "trained": name in plan.learning_rates,
            "after_cold_start": warmed[name],
            "after_rl": adapter_sha256(policy, name),
            "rl_change_sum": moved[name],
        }
        for name in plan.names
    }
    checks = {
        "base_unchanged": base == base_sha256(policy) == reloaded,
        **{
            f"{name}_{'changed' if a['trained'] else 'unchanged'}": changed == a["trained"]
            for name, a in adapters.items()
            for changed in [a["after_cold_start"] != a["after_rl"]]
        },
    }
    record = {
        "base": {"before": base, "after_rl": base_sha256(policy), "base_model_reloaded": reloaded},
        "adapters": adapters,
        "checks": checks,
        "wall_s": round(time.perf_counter() - started),
    }
    (run_dir / "adapter_checks.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(checks))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
