"""``mara train CONFIG.yaml [--out DIR] [--resume] [--tool-cache MODE --tool-snapshot NAME --tool-store DIR]``:
run a training recipe with a progress bar and metrics (the tool flags record or replay the rollouts' tool calls).

A bad or empty recipe, a bad ``--steps``, a task factory that does not import, a model folder with cut weights or
no tokenizer, or ``--resume`` on a run directory with no whole checkpoint is one line on stdout and exit code 2,
before any model is built or file written (``trainer.preflight``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.invocation import user_path
from trainer.config import ConfigError, load_config, replace, to_dict
from trainer.preflight import check_inputs, check_resume_state


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara train", description="Train a policy with a YAML recipe.")
    parser.add_argument("config", help="the recipe, e.g. trainer/recipes/grpo-toy.yaml")
    parser.add_argument("--out", help="run directory (default: runs/<recipe name>)")
    parser.add_argument(
        "--resume", action="store_true", help="continue from the run directory's latest checkpoint"
    )
    parser.add_argument("--steps", type=int, help="override the recipe's number of steps")
    parser.add_argument(
        "--tool-cache",
        help="record/replay the rollouts' tool responses: off|record|replay|replay-or-record (as -T tool_cache)",
    )
    parser.add_argument("--tool-snapshot", help="the tool-store snapshot recorded into or replayed")
    parser.add_argument("--tool-store", help="the tool store: a folder or an fsspec URL")
    args = parser.parse_args(argv)
    run_dir = Path(args.out or Path("runs") / Path(args.config).stem)
    try:
        config = load_config(args.config)
        if args.steps is not None:
            config = replace(config, "--steps", steps=args.steps)
        config = with_tool_cache_flags(config, args)
        check_inputs(config, args.config)
        if args.resume:
            check_resumable(run_dir)
        return train(config, run_dir, resume=args.resume)
    except ConfigError as err:
        print(f"mara train: {err}")
        return 2


def with_tool_cache_flags(config, args: argparse.Namespace):
    """``config`` with ``--tool-cache/--tool-snapshot/--tool-store`` set in ``task.system_options`` (the same
    settings a recipe or ``-T`` gives), checked like the recipe."""
    flags = {
        "tool_cache": args.tool_cache,
        "tool_snapshot": args.tool_snapshot,
        "tool_store": args.tool_store,
    }
    given = {name: value for name, value in flags.items() if value is not None}
    if not given:
        return config
    if "tool_store" in given:
        given["tool_store"] = (
            given["tool_store"] if "://" in given["tool_store"] else str(user_path(given["tool_store"]))
        )
    task = to_dict(config)["task"]
    task["system_options"] = {**task["system_options"], **given}
    return replace(config, "--tool-cache", task=task)


def check_resumable(run_dir: Path) -> None:
    """Raise ``ConfigError`` unless ``run_dir`` holds a complete checkpoint to resume from."""
    from trainer.checkpoint import STATE_FILE, latest_checkpoint

    try:
        found = latest_checkpoint(run_dir)
    except FileNotFoundError as err:
        raise ConfigError(
            f"{run_dir}: --resume: {err}; remove the broken marker or resume another run"
        ) from None
    if found is None:
        raise ConfigError(
            f"{run_dir}: --resume: no checkpoint to resume from; check --out, or drop --resume to start a new run"
        )
    check_resume_state(found / STATE_FILE)


def train(config, run_dir: Path, *, resume: bool = False) -> int:
    """Train ``config`` in ``run_dir``: checkpoints every ``save_every`` steps and at the end, held-out
    evaluations every ``eval.every`` steps (``trainer.heldout``), then plot."""
    from tqdm import tqdm

    from trainer.engine import Trainer
    from trainer.heldout import heldout_metrics, summary_line
    from trainer.metrics import MetricsLog, plot_curves

    trainer = Trainer(config, run_dir, resume=resume)
    main_rank = trainer.dist.is_main
    log = MetricsLog(run_dir, first_step=trainer.step) if main_rank else None
    every = config.eval.every
    first: dict[str, float] = {}
    if trainer.step == 0:
        from trainer.warmup import warm_up

        warm_up(trainer)
        if every:  # the cold start's skill: the "before" of every held-out figure, logged as step -1
            first = heldout_metrics(trainer)
            if log is not None:
                log.write(-1, first)
                print(f"held-out after the cold start: {summary_line(first)}")
    if main_rank:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(json.dumps(to_dict(config), indent=2))
    bar = tqdm(total=config.steps, initial=trainer.step, desc="train", disable=not main_rank)
    last: dict[str, float] = {}
    while trainer.step < config.steps:
        metrics = trainer.train_step()
        if every and (trainer.step % every == 0 or trainer.step == config.steps):
            last = heldout_metrics(trainer)
            metrics.update(last)
            bar.write(f"held-out after step {trainer.step - 1}: {summary_line(last)}")
        if log is not None:
            log.write(trainer.step - 1, metrics)
        bar.set_postfix(
            reward=f"{metrics['reward_mean']:.3f}", loss=f"{metrics.get('loss', float('nan')):.4f}"
        )
        bar.update(1)
        if config.save_every and trainer.step % config.save_every == 0 and trainer.step < config.steps:
            trainer.save()
    bar.close()
    trainer.save()
    if log is not None:
        log.close()
        if first and last:
            print(heldout_table(first, last))
        print(
            f"run directory: {run_dir}  (export: {run_dir / 'exports' / f'step_{trainer.step}'}, curves: {plot_curves(run_dir)})"
        )
    return 0


def heldout_table(before: dict[str, float], after: dict[str, float]) -> str:
    """The held-out metrics after the cold start and after the last step, one per line."""
    from trainer.heldout import PREFIX

    lines = ["held-out skill, after the cold start -> after RL:"]
    for name in sorted(set(before) & set(after)):
        if "/sum_" not in name:
            lines.append(f"  {name.removeprefix(PREFIX):36s} {before[name]:.3f} -> {after[name]:.3f}")
    return "\n".join(lines)
