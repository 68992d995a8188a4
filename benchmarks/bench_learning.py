"""Learning runs: a warm-started tiny recipe trained for N RL steps, each role's reward per step, start vs end.

Not a timed suite (it defines no test, so ``pytest benchmarks`` skips it): run it as a script,

    PYTHONPATH=. .venv/bin/python benchmarks/bench_learning.py trainer/recipes/marsrl-tiny.yaml --steps 30

It runs the recipe's cold start (``mara_bench.trainer.run.warmup``), then ``--steps`` RL steps, and writes
``<out>/metrics.jsonl`` and ``<out>/curves.png`` as ``mara train`` does, and ``<out>/roles.jsonl`` (one line per
step: per role its rows and mean reward -- every row the step's episodes made, those
``algorithm.filter_zero_variance`` drops included -- and how many of its trained rows carry a non-zero advantage;
the method's own metrics, ``<method>/...``). It prints, per role, the mean reward over the first
and the last ``--window`` steps -- what "the role learns" means here: the reward of a non-first role (the
MarsRL Verifier's verdict accuracy, the Corrector's fix rate, MATPO's worker-enabled answers, M-ASK's per-turn
F1 gains) rising over training -- then the same for each method metric (MarsRL: ``marsrl/verifier_precision``,
``verifier_recall`` on wrong solutions, ``verifier_false_alarm_rate`` on right ones, ``corrector_fix_rate``,
``solver_accuracy``; M-ASK: ``mask/final_answer_f1``, the episodes' final answers), and the run's wall time.

When the task has a held-out split (``mara_bench.trainer.run.heldout``), it also evaluates the policy there after the
cold start, every ``eval.every`` steps (the recipe's, or ``--eval-every``) and after the last step
(``heldout`` in ``roles.jsonl``), and prints each held-out metric before -> after RL: a rise counts only where
it shows there.

The RL arm's last step is saved as ``mara train`` saves one (``<out>/exports/step_<N>``, what ``local/`` loads),
before the control arm starts.

``--control`` adds the same-compute supervised arm: after the RL steps the policy goes back to its cold-start
weights and trains on more of the cold start's demonstrations -- the RL stage's optimiser settings (AdamW at
``optim.lr``), ``warmup.batch_size`` demonstrations a step -- until it has spent as many CPU seconds as the RL
steps did (held-out evaluations excluded from both), then is evaluated on the same held-out draws
(``<out>/control.json``). What RL adds beyond its demonstrations is the RL arm's held-out metric minus the
control arm's.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from mara_bench.trainer.config import load_config
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.heldout import PREFIX, heldout_items, heldout_metrics
from mara_bench.trainer.run.metrics import MetricsLog, plot_curves
from mara_bench.trainer.run.warmup import cross_entropy, cycled_batches, demo_samples, role_stats


@dataclass
class StepRecord:
    """One RL step of a learning run: each role's stats and the method's own metrics (absent when undefined)."""

    roles: dict[str, dict[str, float]]
    method: dict[str, float]
    heldout: dict[str, float]
    """The held-out metrics after this step (empty when none was measured)."""


@dataclass
class ControlArm:
    """The supervised control arm: its steps, the CPU seconds they took and the held-out metrics after them."""

    steps: int
    cpu_seconds: float
    heldout: dict[str, float]


@dataclass
class LearningRun:
    """A learning run's steps, its held-out metrics after the cold start (empty without a held-out split), the CPU
    seconds of its RL steps and, with ``control``, the supervised control arm."""

    steps: list[StepRecord]
    heldout_before: dict[str, float]
    rl_cpu_seconds: float
    control: ControlArm | None


def step_role_stats(trainer: Trainer) -> dict[str, dict[str, float]]:
    """Per role, the last step's rows and mean reward (every row its episodes made, those
    ``algorithm.filter_zero_variance`` drops included) and how many of its trained rows carried a non-zero
    advantage (the advantages live on the trained rows only)."""
    trained = role_stats(trainer.last_samples)
    stats = {}
    for role, stat in role_stats(trainer.last_rewarded).items():
        stat.nonzero_advantage = trained[role].nonzero_advantage if role in trained else 0
        stats[role] = asdict(stat)
    return stats


def supervised_control(trainer: Trainer, cpu_budget: float) -> ControlArm:
    """Supervised steps on the run's demonstrations with the RL stage's optimiser settings until ``cpu_budget``
    CPU seconds are spent (at least one step), then the held-out metrics (see the module docstring)."""
    config = trainer.config
    samples = demo_samples(trainer.demos, config.seed, show=False)
    optimizer = torch.optim.AdamW(trainer.policy.parameters(), lr=config.optim.lr, betas=config.optim.betas)
    batches, steps = cycled_batches(samples, config.warmup.batch_size, random.Random(config.seed + 1)), 0
    trainer.policy.train()
    started = time.process_time()
    while steps == 0 or time.process_time() - started < cpu_budget:
        loss, _ = cross_entropy(trainer.policy, next(batches), config.optim.token_budget)
        torch.nn.utils.clip_grad_norm_(trainer.policy.parameters(), config.optim.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        steps += 1
        if steps % 10 == 1:
            print(f"control step {steps}: loss {float(loss):.3f}", flush=True)
    spent = time.process_time() - started
    trainer.policy.eval()
    return ControlArm(steps, spent, heldout_metrics(trainer.evaluation))


def learning_run(
    recipe: str,
    out: Path,
    steps: int,
    seed: int | None = None,
    eval_every: int | None = None,
    control: bool = False,
) -> LearningRun:
    """Warm up, then ``steps`` RL steps; per step, each role's stats (``mara_bench.trainer.run.warmup.RoleStats``), the
    method's metrics (``<method>/...``) and, when evaluated, the held-out metrics. ``seed`` replaces the
    recipe's, ``eval_every`` its ``eval.every``; ``control`` adds the supervised control arm."""
    config = load_config(recipe)
    config.steps = steps
    if seed is not None:
        config.seed = seed
    if eval_every is not None:
        config.eval.every = eval_every
    trainer = Trainer(config, out)
    trainer.warm_up()
    evaluates = bool(heldout_items(trainer.task))
    before = heldout_metrics(trainer.evaluation) if evaluates else {}
    if before:
        print(f"held-out after the cold start: {shown_heldout(before)}", flush=True)
    cold_start = {name: value.detach().clone() for name, value in trainer.policy.state_dict().items()}
    prefix = f"{config.algorithm.method}/"
    history, rl_cpu_seconds = [], 0.0
    curves = MetricsLog(out)
    if before:
        curves.write(-1, before)
    with open(out / "roles.jsonl", "w") as log:
        if before:
            log.write(json.dumps({"step": -1, "heldout": before}) + "\n")
        for _ in range(steps):
            started = time.process_time()
            metrics = trainer.train_step()
            rl_cpu_seconds += time.process_time() - started
            stats = step_role_stats(trainer)
            method = {name: value for name, value in metrics.items() if name.startswith(prefix)}
            every = config.eval.every
            due = evaluates and (trainer.step == steps or (every and trainer.step % every == 0))
            heldout = heldout_metrics(trainer.evaluation) if due else {}
            history.append(StepRecord(stats, method, heldout))
            curves.write(trainer.step - 1, metrics | heldout)
            row = {
                "step": trainer.step - 1,
                "reward_mean": metrics["reward_mean"],
                "roles": stats,
                "method": method,
                "heldout": heldout,
            }
            log.write(json.dumps(row) + "\n")
            log.flush()
            rewards = " ".join(f"{role}={stat['reward_mean']:+.2f}" for role, stat in stats.items())
            shown = " ".join(f"{name.removeprefix(prefix)}={value:.2f}" for name, value in method.items())
            print(f"step {trainer.step - 1}: {rewards} {shown}".rstrip(), flush=True)
            if heldout:
                print(f"  held-out: {shown_heldout(heldout)}", flush=True)
    curves.close()
    plot_curves(out)
    trainer.save()
    arm = None
    if control and evaluates:
        trainer.policy.load_state_dict(cold_start)
        arm = supervised_control(trainer, rl_cpu_seconds)
        (out / "control.json").write_text(json.dumps(asdict(arm) | {"rl_cpu_seconds": rl_cpu_seconds}) + "\n")
    return LearningRun(history, before, rl_cpu_seconds, arm)


def shown_heldout(metrics: dict[str, float]) -> str:
    """Held-out metrics on one line, without the per-sum breakdown."""
    return " ".join(
        f"{name.removeprefix(PREFIX)}={value:.2f}" for name, value in metrics.items() if "/sum_" not in name
    )


def first_and_last(series: list[float | None], window: int) -> tuple[float, float]:
    """The mean over the first and over the last ``window`` values of ``series``, skipping the ``None`` ones."""
    present = [value for value in series if value is not None]
    return sum(present[:window]) / len(present[:window]), sum(present[-window:]) / len(present[-window:])


def start_and_end(history: list[StepRecord], window: int) -> dict[str, tuple[float, float]]:
    """Per role: its mean reward over the first and over the last ``window`` steps in which it had rows."""
    roles = sorted({role for step in history for role in step.roles})
    return {
        role: first_and_last([step.roles.get(role, {}).get("reward_mean") for step in history], window)
        for role in roles
    }


def method_start_and_end(history: list[StepRecord], window: int) -> dict[str, tuple[float, float]]:
    """Per method metric: its mean over the first and over the last ``window`` steps in which it was defined."""
    names = sorted({name for step in history for name in step.method})
    return {name: first_and_last([step.method.get(name) for step in history], window) for name in names}


def heldout_before_after(run: LearningRun) -> dict[str, tuple[float, float]]:
    """Per held-out metric: after the cold start and after the last step (both measured)."""
    after = run.steps[-1].heldout if run.steps else {}
    return {name: (value, after[name]) for name, value in run.heldout_before.items() if name in after}


def seeds_summary(changes: dict[str, list[float]]) -> list[str]:
    """Per role or metric, over the seeds: on how many it rose, and the change's min / median / max."""
    lines = []
    for role, deltas in changes.items():
        rose = sum(delta > 0 for delta in deltas)
        lines.append(
            f"  {role:36s} rose on {rose} of {len(deltas)} seeds; change min {min(deltas):+.3f} "
            f"median {statistics.median(deltas):+.3f} max {max(deltas):+.3f}"
        )
    return lines


def main() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(message)s"
    )  # the trainer's cold-start and held-out lines
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--window", type=int, default=5, help="steps averaged at the start and at the end")
    parser.add_argument(
        "--eval-every", type=int, help="held-out evaluation every N steps (default: the recipe's eval.every)"
    )
    parser.add_argument("--out", type=Path, help="run directory (default: runs/learning-<recipe name>)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="add the same-compute supervised control arm (see the module docstring)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="run once per seed (replacing the recipe's), each into <out>/seed-<N>, then summarise over them",
    )
    args = parser.parse_args()
    out = args.out or Path("runs") / f"learning-{Path(args.recipe).stem}"
    changes: dict[str, list[float]] = {}
    for seed in args.seeds or [None]:
        run_dir = out if seed is None else out / f"seed-{seed}"
        run_dir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        run = learning_run(args.recipe, run_dir, args.steps, seed, args.eval_every, args.control)
        history = run.steps
        minutes = (time.perf_counter() - started) / 60
        which = "" if seed is None else f", seed {seed}"
        print(
            f"{args.recipe}{which}: mean reward per role, first vs last {args.window} steps ({minutes:.1f} min)"
        )
        for role, (start, end) in start_and_end(history, args.window).items():
            print(f"  {role:10s} {start:+.3f} -> {end:+.3f}")
            changes.setdefault(role, []).append(end - start)
        for name, (start, end) in method_start_and_end(history, args.window).items():
            print(f"  {name:28s} {start:.3f} -> {end:.3f}")
        heldout = heldout_before_after(run)
        if heldout:
            print("  held-out (questions never trained on), after the cold start -> after RL:")
        for name, (start, end) in heldout.items():
            print(f"  {name:36s} {start:.3f} -> {end:.3f}")
            if "/sum_" not in name:
                changes.setdefault(name, []).append(end - start)
        if run.control:
            arm = run.control
            print(
                f"  supervised control arm: {arm.steps} steps, {arm.cpu_seconds:.0f} CPU-s "
                f"(RL steps: {run.rl_cpu_seconds:.0f} CPU-s); held-out, cold start -> RL | control:"
            )
            for name, (start, end) in heldout.items():
                if "/sum_" not in name:
                    print(f"  {name:36s} {start:.3f} -> {end:.3f} | {arm.heldout[name]:.3f}")
                    changes.setdefault(f"{name} (RL - control)", []).append(end - arm.heldout[name])
    if args.seeds and len(args.seeds) > 1:
        print(
            f"{args.recipe}: over seeds {' '.join(map(str, args.seeds))}, the change first -> last {args.window} steps"
        )
        print("\n".join(seeds_summary(changes)))


if __name__ == "__main__":
    main()
