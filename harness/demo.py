"""``mara demo``: a real evaluation, fully offline, in well under a minute on a CPU.

Builds the tiny model if it is absent, evaluates it through the ``local/`` provider on the bundled AIME 2025 and
Bamboogle samples with the ``quick`` protocol (greedy, each benchmark's default judge), then prints the scores and
where the logs are (open them with ``inspect view --log-dir DIR``). The tiny model is random, so its scores are 0:
the demo shows the pipeline works end to end, not that the model is any good.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEMO_BENCHMARKS = ("aime2025", "bamboogle")
DEFAULT_MODEL_DIR = "~/.cache/mara-bench/tiny-qwen2"
DEFAULT_LOG_DIR = "logs/demo"


def ensure_tiny_model(model_dir: Path) -> Path:
    """The tiny model at ``model_dir``, built there first if it is not already."""
    from harness.tinymodel import build_tiny_model

    if (model_dir / "config.json").is_file():
        return model_dir
    print(f"building the tiny model in {model_dir} ...")
    return build_tiny_model(model_dir)


def score_lines(log) -> list[str]:
    """One line per scorer of an eval log: its metrics, or the error if the eval failed."""
    if log.status != "success" or log.results is None:
        return [f"  {log.eval.task}: {log.status} {log.error.message if log.error else ''}".rstrip()]
    lines = []
    for score in log.results.scores:
        metrics = ", ".join(f"{name}={metric.value:.3f}" for name, metric in score.metrics.items())
        lines.append(f"  {log.eval.task} [{score.name}] {metrics}  (n={log.results.completed_samples})")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara demo", description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=os.environ.get("MARA_TINY_MODEL", DEFAULT_MODEL_DIR))
    parser.add_argument("--log-dir", default=DEFAULT_LOG_DIR)
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="override the quick protocol's max tokens"
    )
    args = parser.parse_args(argv)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")

    import inspect_ai

    from harness.evaluation import benchmark_task

    model_dir = ensure_tiny_model(Path(args.model_dir).expanduser().resolve())
    tasks = [benchmark_task(name, data="samples", protocol="quick") for name in DEMO_BENCHMARKS]
    logs = inspect_ai.eval(
        tasks, model=f"local/{model_dir}", log_dir=args.log_dir, max_tokens=args.max_tokens, display="plain"
    )
    print("\nscores:")
    for log in logs:
        print("\n".join(score_lines(log)))
    print(f"\nlogs: {Path(args.log_dir).resolve()}  (open with: inspect view --log-dir {args.log_dir})")
    for log in logs:
        print(f"  {log.location}")
    return 0 if all(log.status == "success" for log in logs) else 1
