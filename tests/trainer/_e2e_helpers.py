"""Shared steps of the end-to-end method tests: warm-start a tiny recipe, check every role's signal after one RL
step, score the exported checkpoint with a harness task through ``local/``, and a small MARS look-up recipe with a
held-out split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai import eval
from inspect_ai.log import EvalLog

from mara_bench.trainer.config import load_config
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.warmup import role_stats

ROOT = Path(__file__).resolve().parents[2]

LOOKUP_RUN = """\
model: {{path: {model}}}
task:
  factory: mara_bench.trainer.tasks.lookup:lookup_task
  args: {{n_prompts: 4, k: 2, tools: [search], generated: true, heldout_prompts: 2}}
  system: mars
  system_options: {{max_turns: 2, prompts: compact}}
rollout: {{prompts_per_step: 2, group_size: 2, max_tokens: 16}}
algorithm: {{method: mars, advantage: grpo}}
eval: {{every: 2, samples: 1}}
steps: 2
save_every: 0
"""
"""MARS on four generated countries and two held-out ones (format with ``model=``)."""


def warm_started(recipe: str, run_dir: Path, **warmup: Any) -> Trainer:
    """The recipe's trainer (its own tiny model), after its cold start (``warmup`` overrides its settings)."""
    config = load_config(ROOT / "trainer" / "recipes" / recipe)
    for name, value in warmup.items():
        setattr(config.warmup, name, value)
    trainer = Trainer(config, run_dir)
    records = trainer.warm_up()
    assert records[-1].loss < records[0].loss / 4, "the cold start did not fit the demonstrations"
    return trainer


def assert_every_role_has_signal(trainer: Trainer, roles: tuple[str, ...], steps: int = 3) -> None:
    """Within the first ``steps`` RL steps every role of the system has rows with a non-zero advantage (a step whose
    group outcomes all tie gives none, so a role may need a second step)."""
    signalled: set[str] = set()
    for _ in range(steps):
        metrics = trainer.train_step()
        assert metrics["skipped"] == 0.0
        stats = role_stats(trainer.last_samples)
        assert set(stats) <= set(roles), stats
        signalled |= {role for role, stat in stats.items() if stat.nonzero_advantage > 0}
        if signalled == set(roles):
            return
    raise AssertionError(
        f"roles without a training signal in {steps} steps: {sorted(set(roles) - signalled)}"
    )


def write_rows(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def score_export(trainer: Trainer, task: str, rows: list[dict[str, Any]], **task_args: Any) -> EvalLog:
    """Save the run (checkpoint + HF export), then evaluate ``local/<run dir>`` (its newest export) with the task
    ``tasks/<task>`` on ``rows`` (a local data file in the benchmark's format)."""
    trainer.save()
    data = write_rows(trainer.run_dir / "eval-rows.jsonl", rows)
    [log] = eval(
        str(ROOT / "tasks" / task),
        model=f"local/{trainer.run_dir}",
        task_args={"data": data, **task_args},
        max_tokens=trainer.config.rollout.max_tokens,
        log_dir=str(trainer.run_dir / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == len(rows)
    assert all(sample.scores for sample in log.samples)
    return log
