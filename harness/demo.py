"""``mara demo``: a real evaluation, fully offline, in a minute or two on a CPU.

Evaluates SmolLM2-135M-Instruct (``mara models get smollm2-135m``, which ``scripts/setup.sh`` runs) through the
``local/`` provider with the ``quick`` protocol (greedy, each benchmark's default judge) on the bundled sanity set
(sums and passage look-ups a 135M model partly answers) and the bundled samples of Natural Questions and AIME 2025,
then prints each task's scores, one reply, the agent roles or tools that never ran, and where the logs are (open
them with ``inspect view --log-dir DIR``). Without SmolLM2 it falls back to the random tiny model, whose scores
are 0 by construction.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from mara_bench.harness.packaged_models import PackagedModelError, installed_model

DEMO_TASKS = ("sanity", "nq", "aime2025")
DEMO_MODEL = "smollm2-135m"
DEFAULT_TINY_DIR = "~/.cache/mara-bench/tiny-qwen2"
DEFAULT_LOG_DIR = "logs/demo"
DEFAULT_MAX_TOKENS = 192
REPLY_CHARS = 160
MEANING = {
    DEMO_MODEL: (
        "SmolLM2-135M is a small chat model: it answers about half of the sanity set (acc: the gold answer appears "
        "in its reply), a few Natural Questions, and no AIME problem; the scores show the harness works end to end."
    ),
    "tiny": (
        "The tiny model is random (SmolLM2 is not installed: `mara models get smollm2-135m`): every score is 0 by "
        "construction; the run shows the pipeline works end to end, not that any model is good."
    ),
}


def has_model(model_dir: Path) -> bool:
    return (model_dir / "config.json").is_file()


def ensure_tiny_model(model_dir: Path) -> Path:
    """The tiny model at ``model_dir``, built there first if it is not already."""
    from mara_bench.harness.tinymodel import build_tiny_model

    return model_dir if has_model(model_dir) else build_tiny_model(model_dir)


def score_lines(log) -> list[str]:
    """One line per judge of an eval log (its metrics), or the error if the eval failed."""
    if log.status != "success" or log.results is None:
        return [f"  {log.eval.task}: {log.status} {log.error.message if log.error else ''}".rstrip()]
    lines = []
    for score in log.results.scores:
        if score.name == "accounting":
            continue
        metrics = ", ".join(f"{name}={metric.value:.3f}" for name, metric in score.metrics.items())
        lines.append(f"  {log.eval.task} [{score.name}] {metrics}  (n={log.results.completed_samples})")
    return lines


def reply_line(log) -> str | None:
    """The first sample's question, gold answer and reply, shortened to a line each."""
    if not log.samples:
        return None
    sample = log.samples[0]
    question = sample.input if isinstance(sample.input, str) else sample.input[-1].text
    target = sample.target if isinstance(sample.target, str) else " | ".join(sample.target)
    reply = " ".join(sample.output.completion.split())
    return f"    question: {_short(question)}\n    gold:     {_short(target)}\n    reply:    {_short(reply) or '(empty)'}"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REPLY_CHARS else text[: REPLY_CHARS - 3] + "..."


def idle_lines(log) -> list[str]:
    """A line per agent role that never ran and per tool never called, from the run's ``accounting`` metrics."""
    from mara_bench.harness.accounting import ACCOUNTING_SCORE, idle_parts

    if log.results is None:
        return []
    for score in log.results.scores:
        if score.name == ACCOUNTING_SCORE:
            metrics = {name: metric.value for name, metric in score.metrics.items()}
            return [f"  {log.eval.task}: {part}" for part in idle_parts(metrics)]
    return []


def _model(choice: str | None) -> tuple[str, str, str | None]:
    """The ``local/`` name to evaluate, the key of its meaning line, and a note on the choice (or None)."""
    if choice:
        return choice, choice if choice in MEANING else "", None
    try:
        installed_model(DEMO_MODEL)
    except PackagedModelError as err:
        tiny = Path(os.environ.get("MARA_TINY_MODEL", DEFAULT_TINY_DIR)).expanduser().resolve()
        return str(tiny), "tiny", f"note: {err}; using the random tiny model instead"
    return DEMO_MODEL, DEMO_MODEL, None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara demo", description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a local/ model name (default: smollm2-135m, else the tiny model)")
    parser.add_argument("--log-dir", default=DEFAULT_LOG_DIR)
    parser.add_argument(
        "--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="most new tokens per reply"
    )
    args = parser.parse_args(argv)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")

    import inspect_ai

    model, meaning, note = _model(args.model)
    if note:
        print(note)
    if meaning == "tiny" and not has_model(Path(model)):
        print(f"building the tiny model in {model} ...")
        ensure_tiny_model(Path(model))
    # by registry name, so each task is made with the model active and its log records what local/ resolved to
    logs = inspect_ai.eval(
        [f"mara_bench/{name}" for name in DEMO_TASKS],
        task_args={"data": "samples", "protocol": "quick"},
        model=f"local/{model}",
        log_dir=args.log_dir,
        max_tokens=args.max_tokens,
        display="plain",
    )
    print("\nscores:")
    for log in logs:
        print("\n".join(score_lines(log)))
        reply = reply_line(log)
        if reply:
            print(reply)
    idle = [line for log in logs for line in idle_lines(log)]
    if idle:
        print("\nnever ran:\n" + "\n".join(idle))
    if meaning:
        print(f"\n{MEANING[meaning]}")
    print(f"\nlogs: {Path(args.log_dir).resolve()}  (open with: inspect view --log-dir {args.log_dir})")
    for log in logs:
        print(f"  {log.location}")
    return 0 if all(log.status == "success" for log in logs) else 1
