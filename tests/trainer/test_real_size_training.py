"""What real-size training needs, on the tiny model: PPO mini-batches (one optimizer step per mini-batch; one
mini-batch is the plain update, several make the later ones' importance ratios differ from 1), gradient
checkpointing (same gradients) and optimizer-state offload (same updates, moments kept on the CPU)."""

from __future__ import annotations

import dataclasses
import statistics
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import _engine_update_helpers as helpers  # noqa: E402

from mara_bench.trainer.config import ConfigError, load_config  # noqa: E402
from mara_bench.trainer.learner.logprobs import response_scores  # noqa: E402
from mara_bench.trainer.learner.mini_batches import row_parts  # noqa: E402
from mara_bench.trainer.learner.packing import micro_batches  # noqa: E402
from mara_bench.trainer.run.engine import Trainer  # noqa: E402


def trainer_with(tiny_model_dir, tmp_path, *, prompts=2, model=None, **algorithm) -> Trainer:
    config = helpers.train_config(str(tiny_model_dir))
    config.rollout = dataclasses.replace(config.rollout, prompts_per_step=prompts)
    config.algorithm = dataclasses.replace(config.algorithm, **algorithm)
    if model:
        config.model = dataclasses.replace(config.model, **model)
    return Trainer(config, tmp_path)


def adam_steps(trainer: Trainer) -> set[int]:
    return {int(state["step"]) for state in trainer.updater.optimizer.state.values()}


def test_row_parts_cover_the_rows_in_order_with_sizes_one_apart():
    assert row_parts(8, 4) == [range(0, 2), range(2, 4), range(4, 6), range(6, 8)]
    assert [len(part) for part in row_parts(7, 3)] == [2, 2, 3]
    assert row_parts(1, 2) == [range(0, 0), range(0, 1)]


def test_one_mini_batch_is_the_whole_batch_update(tiny_model_dir, tmp_path):
    plain = helpers.update(trainer_with(tiny_model_dir, tmp_path / "plain"), helpers.make_samples())
    one = helpers.update(
        trainer_with(tiny_model_dir, tmp_path / "one", ppo_mini_batch_size=2), helpers.make_samples()
    )
    assert one["metrics"]["mini_batches"] == 1.0 and one["metrics"]["approx_kl"] == 0.0
    for name in ("loss", "grad_norm", "entropy", "clip_fraction"):
        assert one["metrics"][name] == plain["metrics"][name], name
    for name, param in plain["params"].items():
        assert torch.equal(one["params"][name], param), name


def test_two_mini_batches_take_two_steps_and_the_second_ratio_leaves_one(tiny_model_dir, tmp_path):
    trainer = trainer_with(tiny_model_dir, tmp_path, ppo_mini_batch_size=1)
    samples = helpers.make_samples()
    budget = trainer.config.optim.token_budget
    sampling = [
        response_scores(trainer.policy, batch, 1.0).logprobs.split(batch.response_lengths)
        for batch in micro_batches(samples, budget)
    ]
    metrics = trainer.updater(samples, 0)
    assert metrics["mini_batches"] == 2.0 and adam_steps(trainer) == {2}
    # the old logprobs are the sampling policy's, for the second mini-batch too (not the policy after step one)
    scored = {
        row: logprobs
        for batch, part in zip(micro_batches(samples, budget), sampling, strict=True)
        for row, logprobs in zip(batch.rows, part, strict=True)
    }
    for row, sample in enumerate(samples):
        torch.testing.assert_close(torch.tensor(sample.old_logprobs), scored[row].cpu(), atol=1e-6, rtol=1e-5)
    # mini-batch one: ratio 1 (approx_kl 0); mini-batch two runs after a step, so its ratios are not 1
    assert metrics["approx_kl"] > 0.0


def test_epochs_times_mini_batches_optimizer_steps(tiny_model_dir, tmp_path):
    trainer = trainer_with(tiny_model_dir, tmp_path, prompts=4, ppo_mini_batch_size=1, ppo_epochs=2)
    metrics = trainer.updater(helpers.make_samples(), 0)
    assert metrics["mini_batches"] == 4.0 and adam_steps(trainer) == {8}
    assert trainer.updater.scheduler.last_epoch == 1  # the learning-rate schedule: once per rollout batch


def test_a_mini_batch_size_that_does_not_divide_the_batch_is_one_line(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("rollout:\n  prompts_per_step: 4\nalgorithm:\n  ppo_mini_batch_size: 3\n")
    with pytest.raises(ConfigError) as caught:
        load_config(recipe)
    assert str(caught.value) == (
        f"{recipe}: algorithm.ppo_mini_batch_size: 3 does not divide rollout.prompts_per_step (4); "
        "use a divisor of it, or null for one optimizer step per epoch"
    )


def test_gradient_checkpointing_gives_the_same_gradients(tiny_model_dir, tmp_path):
    plain = helpers.update(trainer_with(tiny_model_dir, tmp_path / "plain"), helpers.make_samples())
    trainer = trainer_with(tiny_model_dir, tmp_path / "ckpt", model={"gradient_checkpointing": True})
    checkpointed_layers = [m for m in trainer.policy.modules() if getattr(m, "gradient_checkpointing", False)]
    assert checkpointed_layers  # the flag transformers sets on each checkpointed layer, under every release
    checkpointed = helpers.update(trainer, helpers.make_samples())
    for name, grad in plain["grads"].items():
        torch.testing.assert_close(checkpointed["grads"][name], grad, atol=1e-7, rtol=1e-6, msg=name)


def test_offloaded_optimizer_state_makes_the_same_updates_and_stays_on_the_cpu(tiny_model_dir, tmp_path):
    def two_updates(path, offload: bool) -> Trainer:
        trainer = trainer_with(tiny_model_dir, path)
        trainer.updater.optim = dataclasses.replace(trainer.updater.optim, offload_optimizer=offload)
        for step in range(2):
            trainer.updater(helpers.make_samples(), step)
        return trainer

    kept, offloaded = two_updates(tmp_path / "kept", False), two_updates(tmp_path / "off", True)
    for (name, param), other in zip(
        kept.policy.named_parameters(), offloaded.policy.parameters(), strict=True
    ):
        assert torch.equal(param, other), name
    moments = [
        v for state in offloaded.updater.optimizer.state.values() for k, v in state.items() if k != "step"
    ]
    assert moments and all(m.device.type == "cpu" for m in moments)


def test_a_context_budget_bounds_the_whole_conversation(tiny_model_dir, tiny_tokenizer):
    """``rollout.max_context_tokens``: a call's prompt (the conversation so far) and its response together."""
    import asyncio

    from transformers import AutoModelForCausalLM

    from mara_bench.harness.providers.sampling import Sampling
    from mara_bench.trainer.learner.policy import PolicyChat

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    question = [{"role": "user", "content": "What is 3 + 4?"}]
    prompt = len(PolicyChat(model, tiny_tokenizer)._render(question))
    sampling = Sampling(max_tokens=50, temperature=1.0, seed=1)

    def reply(context: int | None, messages):
        chat = PolicyChat(model, tiny_tokenizer, defaults=sampling, context_tokens=context)
        return asyncio.run(chat("solver", messages))

    free = reply(None, question)
    bounded = reply(prompt + 3, question)
    assert len(free.response_ids) > 3 and bounded.finish_reason == "length"
    assert bounded.response_ids == free.response_ids[:3]  # the same draws, cut where the budget ends
    later = question + [{"role": "assistant", "content": "7"}, {"role": "user", "content": "Sure?"}]
    full = reply(prompt + 3, later)  # the conversation already fills the budget: no call is made
    assert (full.finish_reason, full.response_ids, full.text) == ("length", [], "")


def test_bfloat16_compute_keeps_float32_weights_that_take_small_updates(tiny_model_dir, tmp_path):
    """``model.dtype: bfloat16`` (``auto`` on a GPU) computes in bfloat16 but keeps the trained weights in float32:
    held in bfloat16, an Adam step at a small learning rate would round away on most weights."""
    trainer = trainer_with(tiny_model_dir, tmp_path, model={"dtype": "bfloat16"})
    for group in trainer.updater.optimizer.param_groups:
        group["lr"] = 1e-5
    assert {p.dtype for p in trainer.policy.parameters()} == {torch.float32}
    ids = torch.tensor([helpers.make_samples()[0].prompt_ids])
    assert trainer.policy(ids).logits.dtype == torch.bfloat16  # the forward runs in the compute dtype
    before = {name: p.detach().clone() for name, p in trainer.policy.named_parameters()}
    trainer.updater(helpers.make_samples(), 0)
    kept, lost_in_bf16 = [], []
    for name, p in trainer.policy.named_parameters():
        after = p.detach()
        kept.append((after != before[name]).float().mean().item())
        start = before[name].to(torch.bfloat16)
        lost_in_bf16.append(
            ((start.float() + after - before[name]).to(torch.bfloat16) == start).float().mean().item()
        )
    assert statistics.median(kept) > 0.9  # float32 weights take the step
    assert statistics.median(lost_in_bf16) > 0.5  # the same step on bfloat16 weights would mostly vanish
