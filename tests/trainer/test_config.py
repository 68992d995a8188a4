"""Recipe loading: the shipped recipes parse; every bad input is one line naming the file, the key and the fix."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mara_bench.trainer.config import ConfigError, TrainConfig, from_dict, load_config
from mara_bench.trainer.run.cli import main as train_main

RECIPE = Path(__file__).resolve().parents[2] / "trainer" / "recipes" / "grpo-toy.yaml"


def test_shipped_recipe_loads():
    config = load_config(RECIPE)
    assert config.model.path is None and config.task.system == "direct"
    assert (config.rollout.group_size, config.algorithm.clip_high, config.optim.lr) == (8, 0.28, 0.01)


@pytest.mark.parametrize("recipe", sorted(RECIPE.parent.glob("*.yaml")), ids=lambda path: path.stem)
def test_every_shipped_recipe_loads(recipe):
    assert load_config(recipe).steps >= 1


def refused(tmp_path, text: str) -> str:
    """The one-line error ``load_config`` raises for a recipe holding ``text``."""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:") and "\n" not in message
    return message


def test_unknown_key_names_the_key_the_closest_name_and_the_valid_ones(tmp_path):
    message = refused(tmp_path, "optim:\n  lr: 0.1\n  grad_clipping: 0.1\n")
    assert message.endswith(
        "bad.yaml: optim.grad_clipping: unknown key; did you mean 'grad_clip'? valid keys under optim: "
        "batching, betas, grad_clip, lr, max_padding, offload_optimizer, token_budget, warmup_steps, weight_decay"
    )


def test_a_typo_in_a_top_level_key_suggests_the_right_one(tmp_path):
    assert "stepz: unknown key; did you mean 'steps'?" in refused(tmp_path, "stepz: 3\n")


def test_mistyped_value_names_the_field(tmp_path):
    message = refused(tmp_path, "rollout: {group_size: eight}\n")
    assert "rollout.group_size: must be an integer, got 'eight'; for example 8" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("steps: -3\n", "steps: must be >= 1, got -3; use a value >= 1"),
        ("rollout: {group_size: 0}\n", "rollout.group_size: must be >= 1, got 0"),
        ("optim: {lr: 0}\n", "optim.lr: must be > 0, got 0"),
        ("steps: true\n", "steps: must be an integer, got True"),
        ("steps: 2.5\n", "steps: must be an integer, got 2.5"),
        ("rollout: {top_p: 1.5}\n", "rollout.top_p: must be <= 1, got 1.5"),
        ("optim: {betas: [0.9, 1.5]}\n", "optim.betas: each must be in [0, 1), got [0.9, 1.5]"),
        ("optim: {betas: [0.9]}\n", "optim.betas: must be a list of 2 values"),
        (
            "algorithm: {marsrl: {agents: 7}, method: marsrl}\n",
            "algorithm.marsrl.agents: must be <= 5, got 7",
        ),
        (
            "model: 3\n",
            "model: must be a mapping of keys, got 3; give a mapping of its keys (dtype, gradient_checkpointing, lora, path",
        ),
        (
            "task: {factory: mara_bench.trainer.tasks.toy}\n",
            "task.factory: 'mara_bench.trainer.tasks.toy' is not 'module:function'",
        ),
    ],
)
def test_out_of_range_and_mistyped_values_are_refused_at_load(tmp_path, text, expected):
    assert expected in refused(tmp_path, text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "algorithm: {loss_mode: token_mean}\n",
            "algorithm.loss_mode: 'token_mean' is not a valid choice; did you mean 'token-mean'?",
        ),
        ("algorithm: {kl_kind: k4}\n", "algorithm.kl_kind: 'k4' is not a valid choice; "),
        (
            "optim: {batching: packed}\n",
            "optim.batching: 'packed' is not a valid choice; did you mean 'pack'?",
        ),
        ("model: {dtype: bf16}\n", "model.dtype: 'bf16' is not a valid choice; did you mean 'bfloat16'?"),
        ("rollout: {scheduler: dynamic}\n", "rollout.scheduler: 'dynamic' is not a valid choice"),
        (
            "algorithm: {advantage: ppo}\n",
            "algorithm.advantage: unknown advantage estimator 'ppo'; valid: gae, grpo",
        ),
        (
            "algorithm: {policy_loss: clip}\n",
            "algorithm.policy_loss: unknown policy loss 'clip'; valid: ppo",
        ),
        (
            "algorithm: {method: mars_rl}\n",
            "algorithm.method: 'mars_rl' is not a valid choice; did you mean 'marsrl'?",
        ),
        ("parallel: ddp\n", "parallel: 'ddp' is not a valid choice; choose one of replicate, fsdp"),
    ],
)
def test_a_typo_in_a_choice_names_the_choices(tmp_path, text, expected):
    assert expected in refused(tmp_path, text)


def test_settings_that_do_not_go_together_name_the_key(tmp_path):
    assert "algorithm.marsrl: applies to method 'marsrl' only" in refused(
        tmp_path, "algorithm: {marsrl: {rollout: grouped}}\n"
    )
    assert "algorithm.marsrl.selection: applies to rollout 'grouped' only" in refused(
        tmp_path, "algorithm: {method: marsrl, marsrl: {selection: random}}\n"
    )


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    message = refused(tmp_path, "steps: 3\nrollout:\n  group_size: [8\n  max_tokens: 4\n")
    assert "bad.yaml:" in message and "YAML syntax error" in message
    assert message.split(":")[1].isdigit()


def test_a_key_given_twice_names_the_file_both_lines_and_the_fix(tmp_path):
    """YAML itself keeps the last of two equal keys without a word: a recipe with a stray second ``model:`` ran on
    whichever came last."""
    message = refused(
        tmp_path, "steps: 3\nmodel: {tiny_hidden_size: 64}\nseed: 1\nmodel: {tiny_hidden_size: 32}\n"
    )
    assert message.endswith("bad.yaml:4: key 'model' given twice (first on line 2); keep one of them")
    nested = refused(tmp_path, "rollout:\n  group_size: 4\n  group_size: 8\n")
    assert nested.endswith("bad.yaml:3: key 'group_size' given twice (first on line 2); keep one of them")


def test_the_method_choices_are_the_registered_methods():
    from mara_bench.trainer.methods import get_method
    from mara_bench.trainer.registry import METHODS

    assert all(get_method(name).name == name for name in METHODS)
    with pytest.raises(
        ConfigError, match="algorithm.method: 'grop' is not a valid choice; did you mean 'grpo'"
    ):
        from_dict(TrainConfig, {"algorithm": {"method": "grop"}})


def test_loading_a_recipe_imports_no_torch():
    """A recipe is checked by names alone (``mara_bench.trainer.registry``): the model stack loads when training
    starts."""
    root = Path(__file__).resolve().parents[2]
    recipes = sorted(str(path) for path in (root / "trainer" / "recipes").glob("*.yaml"))
    assert recipes
    script = (
        "import sys\nfrom mara_bench.trainer.config import load_config\n"
        f"for path in {recipes!r}:\n    load_config(path)\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run(
        [sys.executable, "-c", script], check=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}
    )


def test_building_a_config_in_code_runs_the_same_checks(toy_config):
    from mara_bench.trainer.config import RolloutConfig

    with pytest.raises(ConfigError, match="TrainConfig: parallel: 'ddp' is not a valid choice"):
        dataclasses.replace(toy_config, parallel="ddp")
    with pytest.raises(ConfigError, match="RolloutConfig: group_size: must be >= 1, got 0"):
        RolloutConfig(group_size=0)
    with pytest.raises(ConfigError, match="TrainConfig: steps: must be >= 1"):
        toy_config.steps = 0


def test_cli_reports_a_bad_config_with_exit_code_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("stepz: 3\n")
    assert train_main([str(path)]) == 2
    assert capsys.readouterr().out == f"mara train: {path}: stepz: unknown key; did you mean 'steps'? " + (
        "valid keys: algorithm, eval, model, optim, parallel, roles, rollout, save_every, seed, steps, task, warmup\n"
    )


def test_cli_refuses_a_bad_steps_override(tmp_path, capsys):
    assert train_main([str(RECIPE), "--out", str(tmp_path / "run"), "--steps", "-3"]) == 2
    assert "mara train: --steps: steps: must be >= 1, got -3" in capsys.readouterr().out
    assert not (tmp_path / "run").exists()


def test_cli_warmup_steps_overrides_the_recipes_cold_start(tmp_path, capsys, monkeypatch):
    from mara_bench.trainer.run import cli

    recipe = RECIPE.parent / "marsrl-tiny.yaml"
    assert load_config(recipe).warmup.steps > 0
    ran = []
    monkeypatch.setattr(cli, "train", lambda config, run_dir, resume: ran.append(config) or 0)
    assert train_main([str(recipe), "--out", str(tmp_path / "run"), "--warmup-steps", "3"]) == 0
    assert ran[0].warmup.steps == 3
    assert train_main([str(recipe), "--out", str(tmp_path / "run"), "--warmup-steps", "-1"]) == 2
    assert "mara train: --warmup-steps: warmup.steps: must be >= 0, got -1" in capsys.readouterr().out


def test_cli_refuses_to_resume_a_run_with_no_checkpoint(tmp_path, capsys):
    run = tmp_path / "no-such-run"
    assert train_main([str(RECIPE), "--out", str(run), "--resume"]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"mara train: {run}: --resume: no checkpoint to resume from; ")
    assert not run.exists()  # nothing was built or written


def test_every_config_field_is_documented():
    import ast
    import inspect

    import mara_bench.trainer.config as config_module

    tree = ast.parse(inspect.getsource(config_module))
    for node in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Config")):
        body = node.body
        for index, statement in enumerate(body):
            if isinstance(statement, ast.AnnAssign):
                following = body[index + 1] if index + 1 < len(body) else None
                documented = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                assert documented, f"{node.name}.{statement.target.id} has no docstring"


def test_the_system_and_its_options_are_checked_at_load(tmp_path):
    unknown = refused(tmp_path, "task: {system: dirct}\n")
    assert "task.system: unknown system 'dirct'" in unknown and "'direct'" in unknown
    assert "task.system_options: system 'vc' options: accept_after: must be >= 1, got 0" in refused(
        tmp_path, "task: {system: vc, system_options: {accept_after: 0}}\n"
    )
    assert "unknown option(s) acept_after; did you mean 'accept_after'?" in refused(
        tmp_path, "task: {system: vc, system_options: {acept_after: 2}}\n"
    )


def test_a_bad_prompt_set_fails_at_load_in_one_line(tmp_path):
    assert (
        "task.system_options: system 'vc' options: prompts: 'short' is not a valid choice; "
        "choose one of paper, compact"
    ) in refused(tmp_path, "task: {system: vc, system_options: {prompts: short}}\n")


def test_a_bad_matpo_prompts_value_fails_at_load_in_one_line(tmp_path):
    assert (
        "task.system_options: system 'matpo' options: prompts: 'short' is not a valid choice; "
        "choose one of paper, compact"
    ) in refused(tmp_path, "task: {system: matpo, system_options: {prompts: short}}\n")
