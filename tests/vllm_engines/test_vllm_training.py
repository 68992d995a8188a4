"""Training rollouts on a real vLLM engine (its CPU build in CI): three steps with ``rollout.backend: vllm``
keep the rollout-trainer logprob gap within tolerance, and every sync lands the updated weights in the engine."""

from __future__ import annotations

import pytest
import torch

from mara_bench.harness.chat_template import render_prompt
from mara_bench.trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
from mara_bench.trainer.rollouts.parity import SYNC_PROBE, sync_gap
from mara_bench.trainer.run.engine import Trainer

pytestmark = pytest.mark.vllm

TOLERANCE = 1e-3
"""fp32 on both sides: vLLM's CPU kernels and the transformers forward agree to about 1e-5 per token."""


@pytest.fixture(scope="session")
def vllm_run(vllm_model_dir, tmp_path_factory):
    """A trainer whose rollouts run on vLLM, after three steps, with each step's metrics."""
    config = TrainConfig(
        model=ModelConfig(path=str(vllm_model_dir), dtype="float32"),
        task=TaskConfig(args={"n_prompts": 16, "seed": 0, "total": 7}),
        rollout=RolloutConfig(
            prompts_per_step=2,
            group_size=4,
            max_tokens=6,
            backend="vllm",
            parity="fail",
            parity_bound=TOLERANCE,
            parity_tolerance=TOLERANCE,
        ),
        optim=OptimConfig(lr=1e-2),
        steps=3,
    )
    trainer = Trainer(config, tmp_path_factory.mktemp("vllm-run"))
    return trainer, [trainer.train_step() for _ in range(3)]


def test_three_steps_on_vllm_keep_the_parity_gap_within_tolerance(vllm_run):
    trainer, steps = vllm_run
    assert trainer.rollout.vllm is not None
    for metrics in steps:
        assert metrics["skipped"] == 0.0
        assert metrics["rollout/logprob_gap_max"] < TOLERANCE
        assert metrics["rollout/logprob_gap_over_tol"] == 0.0
        assert metrics["rollout/sync_gap_max"] < TOLERANCE


def test_the_synced_engine_scores_a_fixed_text_as_the_updated_policy(vllm_run):
    trainer, _ = vllm_run
    engine, policy = trainer.rollout.vllm, trainer.policy
    ids = render_prompt(trainer.tokenizer, SYNC_PROBE, add_generation_prompt=False)
    stale = engine.score(ids)  # the engine still holds the weights of the last rollout, before its update
    with torch.no_grad():
        logits = policy(torch.tensor([ids])).logits[0, :-1].float()
    updated = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    assert (torch.tensor(stale) - updated).abs().max() > 10 * TOLERANCE  # the update moved the policy
    assert sync_gap(policy, trainer.tokenizer, engine)["rollout/sync_gap_max"] > 10 * TOLERANCE
    assert trainer.rollout.sync(policy)["rollout/sync_gap_max"] < TOLERANCE
    torch.testing.assert_close(torch.tensor(engine.score(ids)), updated, atol=TOLERANCE, rtol=0)
