"""One frozen base, one LoRA adapter per role (``model.lora`` and ``roles``): the recipe's checks, a short MarsRL run
on the tiny V-C system (each trained role's adapter moves with its own learning rate, the frozen role's and the base
do not, per-role metrics and parity are reported, the KL reference is the base), and its export bound per role
through ``local/``."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
import yaml

from mara_bench.harness.providers.loading import load_checkpoint
from mara_bench.harness.providers.resolve import CheckpointError, resolve_checkpoint
from mara_bench.trainer.config import ConfigError, TrainConfig, from_dict, load_config
from mara_bench.trainer.learner.adapters import BaseWeights, RoleAdapters, adapter_sha256, base_sha256
from mara_bench.trainer.run.cli import main as train_cli

VC_RECIPE = {
    "model": {"path": None, "tiny_arch": "qwen2", "tiny_hidden_size": 64, "lora": {"r": 8, "alpha": 16}},
    "task": {
        "factory": "mara_bench.trainer.tasks.toy:addition_task",
        "args": {"n_prompts": 8, "seed": 0, "total": 7},
        "system": "vc",
        "system_options": {"accept_after": 1, "max_iterations": 1, "solver_attempts": 1},
    },
    "rollout": {
        "prompts_per_step": 2,
        "group_size": 4,
        "max_tokens": 24,
        "temperature": 0.85,
        "parity": "warn",  # measured on the hf backend too: the rows decode through their adapters
        "parity_share": 1.0,
    },
    "algorithm": {"method": "marsrl", "advantage": "grpo", "kl_coef": 0.05},
    "optim": {"lr": 0.001, "token_budget": 16384},
    "warmup": {"steps": 10, "lr": 0.01, "demos_per_item": 4, "batch_size": 8},
    "roles": {"solver": {"adapter": "own", "lr": 0.002}, "verifier": {"adapter": "frozen"}, "corrector": {}},
    "steps": 3,
    "seed": 0,
    "save_every": 0,
}


def recipe_error(tmp_path, recipe: dict) -> str:
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


def with_changes(**sections: dict) -> dict:
    return {**VC_RECIPE, **{key: {**VC_RECIPE.get(key, {}), **value} for key, value in sections.items()}}


@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        (
            with_changes(roles={"verifer": {}}),
            "roles.verifer: system 'vc' has no role 'verifer'; did you mean 'verifier'?",
        ),
        (
            with_changes(roles={role: {"adapter": "frozen"} for role in ("solver", "verifier", "corrector")}),
            "roles: freezes every role's adapter, so nothing trains; leave one role own or shared",
        ),
        (
            with_changes(roles={"verifier": {"adapter": "frozen", "lr": 0.1}}),
            "roles.verifier.lr: a frozen adapter is never updated; remove it",
        ),
        (
            with_changes(
                roles={"solver": {"adapter": "shared", "lr": 0.1}, "corrector": {"adapter": "shared"}}
            ),
            "roles: the shared adapter is given several learning rates",
        ),
        (
            with_changes(roles={"solver": {"adapter": "mine"}}),
            "roles.solver.adapter: 'mine' is not a valid choice",
        ),
        (
            with_changes(model={"lora": {"target_modules": ["q_proj", "lm_head"]}}),
            "model.lora.target_modules: 'lm_head' cannot take an adapter",
        ),
        (
            with_changes(optim={"batching": "pack"}),
            "optim.batching: packs rows of several roles into one sequence",
        ),
        (
            with_changes(model={"lora": None}),
            "roles: sets per-role adapters, and model.lora is null; add model.lora: {}",
        ),
    ],
    ids=["unknown-role", "all-frozen", "frozen-lr", "shared-lrs", "bad-mode", "head", "pack", "no-lora"],
)
def test_a_bad_role_adapter_setting_is_one_line_naming_file_and_key(tmp_path, recipe, expected):
    message = recipe_error(tmp_path, recipe)
    assert message.startswith(f"{tmp_path / 'recipe.yaml'}: ")
    assert expected in message
    assert "\n" not in message


def test_vllm_rollouts_take_per_role_adapters_up_to_the_largest_rank_vllm_serves(tmp_path, monkeypatch):
    from mara_bench.harness.providers import backends

    monkeypatch.setattr(backends, "vllm_ready", lambda: True)  # the refusal below needs no engine
    config = from_dict(TrainConfig, with_changes(rollout={"backend": "vllm"}), "test")
    assert config.rollout.backend == "vllm" and config.model.lora is not None  # vLLM's multi-LoRA serves them
    message = recipe_error(tmp_path, with_changes(rollout={"backend": "vllm"}, model={"lora": {"r": 600}}))
    assert message.startswith(
        f"{tmp_path / 'recipe.yaml'}: model.lora.r: 600 is above the largest LoRA rank vLLM"
    )
    assert "set r to at most 512, or rollout.backend: hf" in message
    assert "\n" not in message


def test_the_adapters_file_of_mara_train_is_checked_and_named(tmp_path, capsys):
    recipe = {key: value for key, value in VC_RECIPE.items() if key != "roles"}
    recipe["model"] = {**recipe["model"], "lora": None}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    (tmp_path / "adapters.yaml").write_text(yaml.safe_dump({"roles": {"judge": {"adapter": "own"}}}))
    code = train_cli([str(tmp_path / "recipe.yaml"), "--adapters", str(tmp_path / "adapters.yaml")])
    assert code == 2
    assert (
        f"{tmp_path / 'adapters.yaml'}: roles.judge: system 'vc' has no role 'judge'"
        in capsys.readouterr().out
    )


ADAPTER_FILES = {  # each shipped adapters file, with the recipe its header names
    "matpo.yaml": "matpo-tiny.yaml",
    "mask.yaml": "mask-tiny.yaml",
    "matpo-smollm2.yaml": "matpo-smollm2.yaml",
    "mask-smollm2.yaml": "mask-smollm2.yaml",
}


def test_every_shipped_adapters_file_applies_to_its_recipe():
    from mara_bench.trainer.run.cli import with_adapters

    recipes = Path(__file__).resolve().parents[2] / "trainer" / "recipes"
    assert sorted(path.name for path in (recipes / "adapters").glob("*.yaml")) == sorted(ADAPTER_FILES)
    for adapters, recipe in ADAPTER_FILES.items():
        config = with_adapters(load_config(recipes / recipe), str(recipes / "adapters" / adapters))
        assert config.model.lora is not None and config.roles, adapters


def test_the_plan_gives_shared_roles_one_adapter_and_frozen_roles_none_to_train():
    shared = from_dict(
        TrainConfig,
        with_changes(roles={"verifier": {"adapter": "shared"}, "corrector": {"adapter": "shared"}}),
        "test",
    )
    plan = RoleAdapters.plan(("solver", "verifier", "corrector"), shared.roles, 0.001)
    assert plan.adapters == {"solver": "solver", "verifier": "shared", "corrector": "shared"}
    assert plan.learning_rates == {"solver": 0.002, "shared": 0.001}
    assert plan.frozen_roles == frozenset()
    frozen = RoleAdapters.plan(
        ("solver", "verifier", "corrector"), from_dict(TrainConfig, VC_RECIPE, "t").roles, 0.003
    )
    assert frozen.names == ["solver", "verifier", "corrector"]
    assert frozen.learning_rates == {"solver": 0.002, "corrector": 0.003}
    assert frozen.frozen_roles == {"verifier"}


def test_the_cold_start_trains_each_adapter_at_warmup_lr_scaled_as_its_role_lr(tmp_path):
    from transformers import AutoModelForCausalLM

    from mara_bench.harness.tinymodel import build_tiny_model
    from mara_bench.trainer.learner.adapters import adapter_parameters, attach
    from mara_bench.trainer.run.warmup import cold_start_groups

    config = from_dict(TrainConfig, VC_RECIPE, "test")  # warmup.lr 0.01, optim.lr 0.001, solver lr 0.002
    plan = RoleAdapters.plan(("solver", "verifier", "corrector"), config.roles, config.optim.lr)
    assert plan.cold_start_rates(config.warmup.lr, config.optim.lr) == pytest.approx(
        {"solver": 0.02, "corrector": 0.01}
    )
    base = AutoModelForCausalLM.from_pretrained(build_tiny_model(tmp_path / "tiny"))
    assert cold_start_groups(base, config.warmup, config.optim) == [
        {"params": list(base.parameters()), "lr": 0.01}
    ]
    with warnings.catch_warnings():  # peft's wrapping warns of transformers internals; attach keeps it quiet
        warnings.simplefilter("error", FutureWarning)
        policy = attach(base, config.model.lora, plan)
    groups = cold_start_groups(policy, config.warmup, config.optim)
    assert [group["lr"] for group in groups] == pytest.approx([0.02, 0.01])
    for group, name in zip(groups, ("solver", "corrector"), strict=True):
        assert {id(p) for p in group["params"]} == {id(p) for p in adapter_parameters(policy, name)}


def test_an_adapter_whose_role_had_no_row_stays_put_despite_its_optimizer_state(tmp_path, monkeypatch):
    """A step where one trained role had no row leaves its adapter as it was (AdamW's momentum and weight decay
    from earlier steps would otherwise move it), and reports no update for it."""
    from mara_bench.trainer.learner.adapters import adapter_parameters
    from mara_bench.trainer.run.engine import Trainer

    monkeypatch.chdir(tmp_path)
    trainer = Trainer(from_dict(TrainConfig, VC_RECIPE, "test"), tmp_path / "run")
    policy, updater = trainer.policy, trainer.updater
    trained = {name: adapter_parameters(policy, name) for name in ("solver", "corrector")}

    def step(with_rows: tuple[str, ...]) -> dict[str, str]:
        generator = torch.Generator().manual_seed(len(with_rows))
        for name, weights in trained.items():
            for p in weights:  # the mixed-adapter forward gives a role without rows zero gradients
                p.grad = (
                    torch.randn(p.shape, generator=generator) if name in with_rows else torch.zeros_like(p)
                )
        updater.adapter_updates = {}
        assert updater._optimizer_step(True, 0) is not None
        return {name: adapter_sha256(policy, name) for name in trained}

    before = {name: adapter_sha256(policy, name) for name in trained}
    moved = step(("solver", "corrector"))  # both build up AdamW state
    assert all(moved[name] != before[name] for name in trained)
    idle = step(("solver",))
    assert idle["solver"] != moved["solver"]
    assert idle["corrector"] == moved["corrector"]
    assert updater.adapter_updates["corrector"] == 0.0 and updater.adapter_updates["solver"] > 0


@pytest.mark.slow
def test_each_role_trains_its_own_adapter_over_the_frozen_base_and_exports_it(tmp_path, monkeypatch):
    from mara_bench.trainer.run.engine import Trainer

    monkeypatch.chdir(tmp_path)
    trainer = Trainer(from_dict(TrainConfig, VC_RECIPE, "test"), tmp_path / "run")
    policy, plan = trainer.policy, trainer.models.adapters
    assert isinstance(trainer.reference, BaseWeights)
    assert sum(p.numel() for p in policy.parameters() if p.requires_grad) < 0.2 * sum(
        p.numel() for p in policy.parameters()
    )
    base = base_sha256(policy)
    trainer.warm_up()
    warmed = {name: adapter_sha256(policy, name) for name in plan.names}
    rows = [trainer.train_step() for _ in range(VC_RECIPE["steps"])]

    assert base_sha256(policy) == base
    assert adapter_sha256(policy, "verifier") == warmed["verifier"]
    for role in ("solver", "corrector"):
        assert adapter_sha256(policy, role) != warmed[role], role
        assert any(row[f"role/{role}/adapter_update"] > 0 for row in rows), role
    assert all(row["role/verifier/adapter_update"] == 0.0 and row["role/verifier/lr"] == 0.0 for row in rows)
    assert all(row["role/solver/lr"] == 0.002 and row["role/corrector/lr"] == 0.001 for row in rows)
    assert all(not row.get("role/verifier/samples") for row in rows)  # a frozen role's rows are not trained
    for role in ("solver", "verifier"):  # parity per role: the engine decoded through the adapter trained on
        gaps = [row[f"role/{role}/rollout/logprob_gap_mean"] for row in rows]
        assert max(gaps) < 1e-3, (role, gaps)
    assert any(
        row.get("kl", 0.0) > 0 for row in rows
    )  # the reference (the base) differs from the adapted policy

    trainer.save()
    export = tmp_path / "run" / "exports" / "step_3"
    record = json.loads((export / "base.json").read_text())
    assert record["sha256"] == base
    from transformers import AutoModelForCausalLM

    assert base_sha256(AutoModelForCausalLM.from_pretrained(tmp_path / "run" / "base-model")) == base
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    for role in plan.adapters:
        resolved = resolve_checkpoint(f"run/adapters/{role}")
        assert resolved.adapter == str(export / "adapters" / role)
        assert resolved.model == str((tmp_path / "run" / "base-model").resolve())
        loaded = load_checkpoint(resolved, dtype="float32", device="cpu").model
        policy.set_adapter(plan.adapter(role))
        with torch.no_grad():
            assert torch.allclose(loaded(ids).logits, policy(ids).logits, atol=1e-5), role
    with pytest.raises(CheckpointError, match="holds one LoRA adapter per role"):
        resolve_checkpoint("run")
