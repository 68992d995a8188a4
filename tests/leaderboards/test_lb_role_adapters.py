"""A role matrix over one base: ``mara nightly`` runs base against trained LoRA adapters per MATPO role, each
adapter the export of a tiny run with one adapter per role (``mara_bench.trainer.learner.adapters``) served as
``local/RUN/adapters/<role>``. Every combination's log names, per role, the adapter that served it (or none) over
the one base, the planner's adapter changes what the planner says, and ``summary.md`` holds the matrix table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from inspect_ai.log import list_eval_logs, read_eval_log

from mara_bench.harness.cli import main as mara
from mara_bench.trainer.config import load_config
from mara_bench.trainer.learner.adapters import adapter_parameters
from mara_bench.trainer.run.cli import with_adapters

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "trainer" / "recipes"
ROLES = ("planner", "worker")


def trained_run(run_dir: Path):
    """The tiny MATPO recipe with an adapter per role, every adapter moved off zero as training would move it,
    exported (``exports/step_0``: the base's reference and ``adapters/<role>``)."""
    from mara_bench.trainer.run.engine import Trainer

    config = with_adapters(load_config(RECIPES / "matpo-tiny.yaml"), str(RECIPES / "adapters" / "matpo.yaml"))
    trainer = Trainer(config, run_dir)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for role in ROLES:
            for parameter in adapter_parameters(trainer.policy, role):
                parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    trainer.save()
    return trainer


def suite(path: Path, rows: Path, index: Path) -> Path:
    base = "local/run/base-model"
    raw = {
        "name": "role-adapters",
        "settings": {"eval": {"max_tasks": 1, "temperature": 0.0}},  # greedy: replies repeat
        "checkpoints": [{"name": "base", "model": base}],
        "tasks": [
            {
                "name": "lookup",
                "task": f"{ROOT / 'tasks' / 'qa.py'}@bamboogle",
                "args": {
                    "data": str(rows),
                    "index": str(index),
                    "k": 2,
                    "max_turns": 1,
                    "worker_max_turns": 1,
                },
                "systems": ["matpo"],
            }
        ],
        "role_matrix": {
            "task": "lookup",
            "system": "matpo",
            "roles": {role: {"base": base, "trained": f"local/run/adapters/{role}"} for role in ROLES},
        },
    }
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_role_matrix_varies_each_roles_adapter_on_one_base(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trainer = trained_run(tmp_path / "run")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in trainer.task.benchmark_rows()[:2]))
    out = tmp_path / "out"
    argv = ["nightly", str(suite(tmp_path / "suite.yaml", rows, trainer.task.index)), "--out", str(out)]
    assert mara(argv + ["--display", "none", "--night", "2026-01-01"]) == 0

    base = str((tmp_path / "run" / "base-model").resolve())
    export = (tmp_path / "run" / "exports" / "step_0" / "adapters").resolve()
    replies: dict[tuple[str, str], list[str]] = {}
    for info in list_eval_logs(str(out / "logs"), recursive=True):
        log = read_eval_log(info.name)
        combination = log.eval.metadata.get("role_matrix")
        if combination is None:
            continue
        served = log.eval.metadata["resolved_role_checkpoints"]
        for role, variant in combination.items():
            record = served[role]
            if variant == "trained":
                assert (record["adapter"], record["base"]) == (str(export / role), base), record
            else:
                assert (record["adapter"], record["path"]) == (None, base), record
        replies[(combination["planner"], combination["worker"])] = [
            sample.output.completion for sample in log.samples
        ]
    assert set(replies) == {(p, w) for p in ("base", "trained") for w in ("base", "trained")}
    assert replies[("trained", "base")] != replies[("base", "base")]  # the planner's adapter is in use

    summary = (out / "site" / "summary.md").read_text()
    assert "Role matrix, lookup · matpo" in summary
    table = [line for line in summary.splitlines() if line.startswith(("| base |", "| trained |"))]
    assert [line.split(" | ")[:2] for line in table] == [
        ["| base", "base"],
        ["| base", "trained"],
        ["| trained", "base"],
        ["| trained", "trained"],
    ]
    assert "baseline" in table[0] and all("(" in line for line in table[1:])
