"""Per-role LoRA adapters on a real vLLM engine (its CPU build in CI): a short MarsRL run on the V-C system whose
rollouts decode with vLLM's multi-LoRA, one ``LoRARequest`` per role, the trained adapters synced after each
update under fresh request ids, the frozen one kept, and each role's rows scored by the trainer with the adapter
that decoded them."""

from __future__ import annotations

import pytest
import torch

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.adapter_rows import adapter_rows
from mara_bench.trainer.config import TrainConfig, from_dict
from mara_bench.trainer.learner.adapters import adapter_sha256, base_sha256
from mara_bench.trainer.rollouts.parity import SYNC_PROBE
from mara_bench.trainer.run.engine import Trainer

pytestmark = pytest.mark.vllm

TOLERANCE = 1e-3
"""fp32 on both sides: vLLM's CPU LoRA kernels and peft's forward agree to within 1e-4 per token."""
ROLES = ("solver", "verifier", "corrector")
TRAINED = ("solver", "corrector")


def recipe(model_dir) -> dict:
    return {
        "model": {"path": str(model_dir), "dtype": "float32", "lora": {"r": 8, "alpha": 16}},
        "task": {
            "factory": "mara_bench.trainer.tasks.toy:addition_task",
            "args": {"n_prompts": 8, "seed": 0, "total": 7},
            "system": "vc",
            "system_options": {"accept_after": 1, "max_iterations": 1, "solver_attempts": 1},
        },
        "rollout": {
            "prompts_per_step": 2,
            "group_size": 2,
            "max_tokens": 12,
            "temperature": 0.85,
            "backend": "vllm",
            "parity": "fail",
            "parity_share": 1.0,
            "parity_bound": TOLERANCE,
            "parity_tolerance": TOLERANCE,
        },
        "algorithm": {"method": "marsrl", "advantage": "grpo", "kl_coef": 0.05},
        "optim": {"lr": 0.002, "token_budget": 16384},
        "warmup": {"steps": 4, "lr": 0.02, "demos_per_item": 2, "batch_size": 8},
        "roles": {"solver": {"lr": 0.004}, "verifier": {"adapter": "frozen"}, "corrector": {}},
        "steps": 2,
        "seed": 0,
        "save_every": 0,
    }


@pytest.fixture(scope="module")
def adapter_run(vllm_model_dir, tmp_path_factory):
    """The trainer after its cold start and two RL steps on vLLM, with the adapters' hashes after the cold start,
    each step's metrics and the engine's request id per adapter after each step's sync."""
    trainer = Trainer(
        from_dict(TrainConfig, recipe(vllm_model_dir), "vllm-adapters"), tmp_path_factory.mktemp("run")
    )
    trainer.warm_up()
    policy, plan = trainer.policy, trainer.models.adapters
    warmed = {name: adapter_sha256(policy, name) for name in plan.names}
    base = base_sha256(policy)
    steps, request_ids = [], []
    for _ in range(2):
        steps.append(trainer.train_step())
        request_ids.append({name: r.lora_int_id for name, r in trainer.rollout.vllm.requests.items()})
    return trainer, warmed, base, steps, request_ids


def routed_logprobs(policy, ids: list[int], adapter: str) -> torch.Tensor:
    with torch.no_grad(), adapter_rows(policy, [adapter]):
        logits = policy(torch.tensor([ids])).logits[0, :-1].float()
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]


def test_each_role_decodes_on_vllm_with_its_adapter_within_the_parity_bound(adapter_run):
    trainer, _, _, steps, _ = adapter_run
    engine = trainer.rollout.vllm
    assert engine is not None and engine.adapters is not None
    assert engine.llm.llm_engine.vllm_config.lora_config.max_loras == 3
    for metrics in steps:
        assert metrics["rollout/sync_gap_max"] < TOLERANCE
        assert metrics["rollout/logprob_gap_max"] < TOLERANCE
        for role in ("solver", "verifier"):  # each role's rows, scored by the trainer through its adapter
            assert metrics[f"role/{role}/rollout/logprob_gap_max"] < TOLERANCE, (role, metrics)


def test_trained_adapters_change_and_are_served_anew_while_the_frozen_one_is_kept(adapter_run):
    trainer, warmed, base, steps, request_ids = adapter_run
    policy = trainer.policy
    assert base_sha256(policy) == base
    assert adapter_sha256(policy, "verifier") == warmed["verifier"]
    for role in TRAINED:
        assert adapter_sha256(policy, role) != warmed[role], role
        assert steps[0][f"role/{role}/adapter_update"] > 0, role
    first, second = request_ids
    assert second["verifier"] == first["verifier"]  # vLLM keeps the frozen adapter it loaded
    for role in TRAINED:  # step 2's rollouts decode with the adapters step 1 updated, under new ids
        assert second[role] != first[role], role


def test_after_an_update_only_the_sync_serves_the_updated_adapter(adapter_run):
    trainer, *_ = adapter_run
    engine, policy = trainer.rollout.vllm, trainer.policy
    ids = render_prompt(trainer.tokenizer, SYNC_PROBE, add_generation_prompt=False)
    for role in TRAINED:  # the engine still serves the adapters of step 2's rollout, before its update
        stale = torch.tensor(engine.score(ids, role))
        assert (stale - routed_logprobs(policy, ids, role)).abs().max() > 10 * TOLERANCE, role
    assert trainer.rollout.sync(policy)["rollout/sync_gap_max"] < TOLERANCE
    for role in ROLES:
        synced = torch.tensor(engine.score(ids, role))
        torch.testing.assert_close(synced, routed_logprobs(policy, ids, role), atol=TOLERANCE, rtol=0)
    with pytest.raises(ValueError, match="under adapters every row needs one"):
        engine.score(ids)
