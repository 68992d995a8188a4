"""``mara train CONFIG.yaml [--out DIR] [--resume] [--steps N] [--warmup-steps N] [--adapters FILE]
[--tool-cache MODE --tool-snapshot NAME --tool-store DIR]``: run a training recipe with a progress bar and metrics (``--adapters`` trains one LoRA adapter
per role, ``mara_bench.trainer.adapter_config``; the tool flags record or replay the rollouts' tool calls).

A bad or empty recipe, a bad ``--steps``, a task factory that does not import, a model folder with cut weights or
no tokenizer, or ``--resume`` on a run directory with no whole checkpoint is one line on stdout and exit code 2,
before any model is built or file written (``mara_bench.trainer.run.preflight``).

The trainer reports through ``logging`` (a logger per module under ``mara_bench.trainer``); ``mara train`` shows
those lines on stdout (``TerminalLines``), a warning as ``warning: <message>``.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mara_bench.harness.invocation import user_path
from mara_bench.trainer.config import ConfigError, load_config, replace, to_dict
from mara_bench.trainer.run.preflight import check_inputs, check_resume_state


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara train", description="Train a policy with a YAML recipe.")
    parser.add_argument("config", help="the recipe, e.g. trainer/recipes/grpo-toy.yaml")
    parser.add_argument("--out", help="run directory (default: runs/<recipe name>)")
    parser.add_argument(
        "--resume", action="store_true", help="continue from the run directory's latest checkpoint"
    )
    parser.add_argument("--steps", type=int, help="override the recipe's number of steps")
    parser.add_argument(
        "--warmup-steps", type=int, help="override the cold start's fine-tuning steps (warmup.steps; 0: none)"
    )
    parser.add_argument(
        "--adapters",
        help="a YAML file of {lora: {...}, roles: {...}}: train one LoRA adapter per role over the frozen base "
        "(the recipe's model.lora and roles)",
    )
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
        if args.warmup_steps is not None:
            warmup = {**to_dict(config)["warmup"], "steps": args.warmup_steps}
            config = replace(config, "--warmup-steps", warmup=warmup)
        if args.adapters is not None:
            config = with_adapters(config, args.adapters)
        config = with_tool_cache_flags(config, args)
        check_inputs(config, args.config)
        if args.resume:
            check_resumable(run_dir)
        with trainer_lines():
            return train(config, run_dir, resume=args.resume)
    except ConfigError as err:
        print(f"mara train: {err}")
        return 2


class TerminalLines(logging.Handler):
    """Log records as lines on stdout, written around any progress bar (``tqdm.write``); a record of level
    WARNING or above reads ``<level>: <message>``."""

    def emit(self, record: logging.LogRecord) -> None:
        from tqdm import tqdm

        try:
            level = f"{record.levelname.lower()}: " if record.levelno >= logging.WARNING else ""
            tqdm.write(level + self.format(record), file=sys.stdout)
        except Exception:  # logging's contract: a failing handler reports itself and never raises
            self.handleError(record)


@contextmanager
def trainer_lines() -> Iterator[None]:
    """Within the block, the trainer's INFO lines and above show on the terminal (``TerminalLines``)."""
    trainer = logging.getLogger("mara_bench.trainer")
    handler, level = TerminalLines(), trainer.level
    trainer.addHandler(handler)
    trainer.setLevel(logging.INFO)
    try:
        yield
    finally:
        trainer.removeHandler(handler)
        trainer.setLevel(level)


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


def with_adapters(config, path: str):
    """``config`` with the per-role adapter settings of the YAML file ``path`` (``AdapterRecipe``) as its
    ``model.lora`` and ``roles``; a problem names ``path``."""
    from mara_bench.core.typed_config import load_yaml, validate
    from mara_bench.trainer.adapter_config import AdapterRecipe

    settings = validate(AdapterRecipe, load_yaml(path) or {}, path)
    model = {**to_dict(config)["model"], "lora": dataclasses.asdict(settings.lora)}
    roles = {role: dataclasses.asdict(role_settings) for role, role_settings in settings.roles.items()}
    return replace(config, path, model=model, roles=roles)


def check_resumable(run_dir: Path) -> None:
    """Raise ``ConfigError`` unless ``run_dir`` holds a complete checkpoint to resume from."""
    from mara_bench.trainer.run.checkpoint import STATE_FILE, latest_checkpoint

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
    """Train ``config`` in ``run_dir`` (``Trainer.fit``)."""
    from mara_bench.trainer.run.engine import Trainer

    Trainer(config, run_dir, resume=resume).fit()
    return 0
