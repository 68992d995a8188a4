"""``rollout.frozen_roles``: MarsRL's Verifier and Corrector train against a fixed Solver served by another model
(a ``local/`` tiny model, through Inspect). The Solver's calls go to that model (counted), its weights never change,
its rows are never trained, and the trained roles get non-zero advantages. Runs the real ``mara train`` CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.cli import main as mara
from mara_bench.harness.tinymodel import build_tiny_model
from mara_bench.trainer.config import load_config

RECIPE = {
    "model": {"path": None, "tiny_arch": "qwen2", "tiny_hidden_size": 64},
    "task": {
        "factory": "mara_bench.trainer.tasks.toy:addition_task",
        "args": {"n_prompts": 8, "seed": 0, "total": 7},
        "system": "vc",
        "system_options": {"accept_after": 1, "max_iterations": 1, "solver_attempts": 1},
    },
    "rollout": {"prompts_per_step": 2, "group_size": 4, "max_tokens": 24, "temperature": 0.85},
    "algorithm": {"method": "marsrl", "advantage": "grpo", "kl_coef": 0.0},
    "optim": {"lr": 0.001, "token_budget": 16384},
    "warmup": {"steps": 20, "lr": 0.01, "demos_per_item": 4, "batch_size": 8},
    "steps": 2,
    "seed": 0,
    "save_every": 0,
}


def _weights_hash(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.slow
def test_verifier_and_corrector_train_against_a_frozen_external_solver(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    solver = build_tiny_model(tmp_path / "fixed-solver", hidden_size=64, seed=7)
    before = _weights_hash(solver)
    recipe = {**RECIPE, "rollout": {**RECIPE["rollout"], "frozen_roles": {"solver": f"local/{solver}"}}}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))

    assert mara(["train", "recipe.yaml", "--out", "run"]) == 0

    assert _weights_hash(solver) == before
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    rows = [row for row in rows if "step" in row]
    # every question's group starts with one Solver call per chain, all answered by the fixed model
    assert all(row["frozen/solver/calls"] >= 2 * 4 for row in rows)
    assert all(not row.get("role/solver/samples") for row in rows)
    assert any(row.get("role/verifier/adv_nonzero_frac", 0) > 0 for row in rows)
    episodes = [
        json.loads(line)
        for path in sorted((tmp_path / "run" / "rollouts").glob("step_*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    solver_models = {
        call["reply"]["model"]
        for record in episodes
        for episode in record.get("episodes", [])
        for call in episode["calls"]
        if call["role"] == "solver"
    }
    assert solver_models and all(str(solver) in (model or "") for model in solver_models), solver_models


def test_a_frozen_role_the_system_does_not_have_is_one_line(tmp_path):
    recipe = {**RECIPE, "rollout": {**RECIPE["rollout"], "frozen_roles": {"solvr": "mockllm/model"}}}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    with pytest.raises(
        ConfigError,
        match=r"rollout.frozen_roles.solvr: system 'vc' has no role 'solvr'; did you mean 'solver'",
    ):
        load_config(tmp_path / "recipe.yaml")
