"""Recipe loading: the shipped recipe parses, unknown keys and mistyped values are named."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from trainer.cli import main as train_main
from trainer.config import ConfigError, load_config

RECIPE = Path(__file__).resolve().parents[2] / "trainer" / "recipes" / "grpo-toy.yaml"


def test_shipped_recipe_loads():
    config = load_config(RECIPE)
    assert config.model.path is None and config.task.system == "direct"
    assert (config.rollout.group_size, config.algorithm.clip_high, config.optim.lr) == (8, 0.28, 0.01)


def test_unknown_key_names_the_key_and_the_valid_ones(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("optim:\n  lr: 0.1\n  learning_rate: 0.1\n")
    with pytest.raises(
        ConfigError, match=r"unknown key config\.optim\.learning_rate .*valid keys under config\.optim: .*lr"
    ):
        load_config(path)


def test_mistyped_value_names_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("rollout: {group_size: eight}\n")
    with pytest.raises(ConfigError, match=r"config\.rollout\.group_size must be int, got 'eight'"):
        load_config(path)


def test_cli_reports_a_bad_config_with_exit_code_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("stepz: 3\n")
    assert train_main([str(path)]) == 2
    assert "unknown key config.stepz" in capsys.readouterr().out


def test_unknown_parallel_mode_is_named(toy_config, tmp_path):
    from trainer.engine import Trainer

    with pytest.raises(ValueError, match="parallel must be one of replicate, fsdp, got 'ddp'"):
        Trainer(dataclasses.replace(toy_config, parallel="ddp"), tmp_path)


def test_every_config_field_is_documented():
    import ast
    import inspect

    import trainer.config as config_module

    tree = ast.parse(inspect.getsource(config_module))
    for node in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Config")):
        body = node.body
        for index, statement in enumerate(body):
            if isinstance(statement, ast.AnnAssign):
                following = body[index + 1] if index + 1 < len(body) else None
                documented = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                assert documented, f"{node.name}.{statement.target.id} has no docstring"
