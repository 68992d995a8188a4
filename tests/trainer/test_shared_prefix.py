"""The ``shared-prefix`` layout: rows that share a prompt compute it once, and score and train exactly as rows
run alone (logprobs, entropies and every parameter's gradient); rows that share nothing, or share a prompt under
different roles, are not grouped; where the layout cannot apply the update lays rows out as ``bucket``."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from mara_bench.core.samples import Sample
from mara_bench.trainer.config import (
    AlgorithmConfig,
    ModelConfig,
    OptimConfig,
    RolloutConfig,
    TaskConfig,
    TrainConfig,
)
from mara_bench.trainer.learner.logprobs import response_scores
from mara_bench.trainer.learner.models import enable_activation_checkpointing
from mara_bench.trainer.learner.packing import micro_batches
from mara_bench.trainer.learner.shared_prefix import MIN_SAVED_TOKENS, fallback_reason, shared_groups
from mara_bench.trainer.run.engine import Trainer

TEMPERATURE = 0.9


def _ids(generator: torch.Generator, length: int) -> list[int]:
    return torch.randint(3, 500, (length,), generator=generator).tolist()


def _groups(shapes: list[tuple[int, list[int], str]], seed: int = 0) -> list[Sample]:
    """Per group ``(prompt length, response lengths, role)``: that many rows sharing one random prompt."""
    g = torch.Generator().manual_seed(seed)
    samples = []
    for prompt_length, responses, role in shapes:
        prompt = _ids(g, prompt_length)
        samples += [
            Sample(prompt_ids=prompt, response_ids=_ids(g, r), loss_mask=[1] * r, role=role)
            for r in responses
        ]
    return samples


def _scores_and_gradients(model, samples, layout: str, token_budget: int = 10**4):
    """Per-row logprobs and entropies (row order), and every parameter's gradient of a weighted loss on them."""
    model.zero_grad(set_to_none=True)
    batches = micro_batches(samples, token_budget, layout, max_padding=0.9)
    logprobs, entropies = {}, {}
    for batch in batches:
        scores = response_scores(model, batch, TEMPERATURE, with_entropy=True)
        lengths = batch.response_lengths
        split = zip(scores.logprobs.split(lengths), scores.entropy.split(lengths), strict=True)
        for row, (logprob, entropy) in zip(batch.rows, split, strict=True):
            logprobs[row], entropies[row] = logprob, entropy
    logprob = torch.cat([logprobs[row] for row in range(len(samples))])
    entropy = torch.cat([entropies[row] for row in range(len(samples))])
    weights = torch.linspace(-1.0, 1.0, len(logprob))  # every token's gradient counts, with its own sign
    ((weights * logprob).sum() - 0.1 * entropy.sum()).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return logprob.detach(), entropy.detach(), grads, batches


def _assert_same(model, samples, token_budget: int = 10**4):
    """``shared-prefix`` scores and gradients equal each row's alone (``bucket`` with one row per micro-batch)."""
    alone = _scores_and_gradients(model, samples, "bucket", token_budget=1)
    shared = _scores_and_gradients(model, samples, "shared-prefix", token_budget)
    torch.testing.assert_close(shared[0], alone[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared[1], alone[1], atol=1e-5, rtol=1e-5)
    assert shared[2].keys() == alone[2].keys() and shared[2]
    for name, grad in alone[2].items():
        torch.testing.assert_close(shared[2][name], grad, atol=1e-5, rtol=1e-4, msg=name)
    return shared[3]


@pytest.fixture
def model(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).train()


def test_groups_score_and_train_like_rows_alone(model):
    # two groups whose prefixes differ in length (the attention mask hides the shorter one's padding), a row
    # whose prompt no other row shares, and responses of 1 to 9 tokens
    samples = _groups([(40, [3, 9, 1, 5], ""), (25, [6, 2, 7], ""), (30, [4], "")])
    batches = _assert_same(model, samples)
    shared = [batch for batch in batches if batch.prefix is not None]
    assert len(shared) == 1 and shared[0].rows == [1, 3, 0, 2, 6, 4, 5]  # longest response first
    assert shared[0].prefix.input_ids.shape == (2, 39) and shared[0].prefix.mask is not None
    assert [batch.rows for batch in batches if batch.prefix is None] == [[7]]
    assert shared[0].slots == 2 * 39 + 7 * 10  # one prefix per group, not one prompt per row


def test_a_group_larger_than_the_budget_is_cut_into_parts_that_each_compute_the_prefix(model):
    samples = _groups([(20, [8, 8, 3, 5, 6], "")])
    batches = _assert_same(model, samples, token_budget=19 + 2 * 9)
    assert [batch.rows for batch in batches] == [[0, 1], [4, 3], [2]]
    assert all(batch.prefix is not None and batch.prefix.mask is None for batch in batches)


def test_rows_share_only_with_the_same_role_and_prompt_and_a_prefix_worth_sharing():
    short = (
        MIN_SAVED_TOKENS // 3
    )  # 3 rows sharing (short - 1) tokens spare 2 * (short - 1) < MIN_SAVED_TOKENS
    samples = _groups([(MIN_SAVED_TOKENS + 1, [2, 3], "solver"), (short, [2, 2, 2], "solver")])
    samples += [Sample(prompt_ids=samples[0].prompt_ids, response_ids=[7], loss_mask=[1], role="verifier")]
    groups, alone = shared_groups(samples)
    assert groups == [[1, 0]] and alone == [2, 3, 4, 5]
    different = _groups([(20, [2], ""), (20, [3], "")], seed=1)  # same length, different tokens
    assert shared_groups(different) == ([], [0, 1])


def test_rows_of_different_roles_go_through_their_own_adapters(tiny_model_dir):
    from mara_bench.trainer.adapter_config import LoraConfig
    from mara_bench.trainer.learner.adapters import RoleAdapters, adapter_parameters, attach

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    plan = RoleAdapters.plan(["solver", "verifier"], {}, 1e-3)
    policy = attach(base, LoraConfig(r=4, alpha=8, dropout=0.0), plan)
    g = torch.Generator().manual_seed(3)
    for name in plan.names:  # adapters that change the model, each differently
        for parameter in adapter_parameters(policy, name):
            parameter.data = torch.randn(parameter.shape, generator=g) * 0.3
    samples = _groups([(40, [4, 6], "solver"), (40, [5, 2, 3], "verifier")])
    prompt = samples[0].prompt_ids  # the verifier's rows get the solver's prompt: same prompt, other role
    samples[2:] = [
        Sample(prompt_ids=prompt, response_ids=s.response_ids, loss_mask=s.loss_mask, role=s.role)
        for s in samples[2:]
    ]
    policy.train()
    batches = _assert_same(policy, samples)
    [shared] = batches
    assert shared.prefix is not None and shared.prefix.roles == ["solver", "verifier"]


def test_the_update_falls_back_to_bucket_where_prefixes_cannot_be_shared(model):
    assert fallback_reason(model) is None
    assert "critic" in fallback_reason(model, critic=model)
    assert "FSDP" in fallback_reason(model, sharded=True)
    enable_activation_checkpointing(model)
    assert "checkpointing" in fallback_reason(model)


def _update(tiny_model_dir, tmp_path, batching: str, **algorithm):
    """The trainer's update (a KL reference, two PPO epochs: old and reference logprobs scored in the layout too)
    on 3 groups of 3 rows sharing 40-token prompts; its metrics, gradients and layout."""
    config = TrainConfig(
        model=ModelConfig(path=str(tiny_model_dir)),
        task=TaskConfig(args={"n_prompts": 8, "total": 7}),
        rollout=RolloutConfig(prompts_per_step=3, group_size=3, max_tokens=8),
        algorithm=AlgorithmConfig(**{"kl_coef": 0.1, "ppo_epochs": 2, **algorithm}),
        optim=OptimConfig(grad_clip=100.0, batching=batching),
    )
    trainer = Trainer(config, tmp_path / batching)
    samples = _groups([(40, [3, 8, 5], ""), (41, [2, 6, 7], ""), (40, [4, 1, 8], "")])
    for row, sample in enumerate(samples):
        sample.group_key, sample.reward, sample.role = f"q{row // 3}", float(row % 3 == 1), "solver"
    grads: dict[str, torch.Tensor] = {}

    def record(optimizer, args, kwargs):
        if not grads:  # the first optimizer step's
            grads.update({name: p.grad.clone() for name, p in trainer.policy.named_parameters()})

    hook = trainer.updater.optimizer.register_step_pre_hook(record)
    metrics = trainer.updater(samples, trainer.step)
    hook.remove()
    return metrics, grads, trainer.updater.batching


def test_the_update_trains_as_bucket_does_with_fewer_positions(tiny_model_dir, tmp_path):
    shared, grads, layout = _update(tiny_model_dir, tmp_path, "shared-prefix")
    bucket, expected, _ = _update(tiny_model_dir, tmp_path, "bucket")
    assert layout == "shared-prefix" and shared["micro_batches"] == 1.0
    for name in ("loss", "entropy", "kl", "approx_kl", "grad_norm"):
        assert shared[name] == pytest.approx(bucket[name], rel=1e-5, abs=1e-7), name
    for name, grad in expected.items():
        torch.testing.assert_close(grads[name], grad, atol=1e-6, rtol=1e-5, msg=name)


def test_the_update_lays_rows_out_as_bucket_with_a_critic(tiny_model_dir, tmp_path):
    _, _, layout = _update(tiny_model_dir, tmp_path, "shared-prefix", advantage="gae")
    assert layout == "bucket"
