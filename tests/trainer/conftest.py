"""Fixtures for the trainer tests: one tiny model and tokenizer built offline per session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    import torch

    from mara_bench.harness.tinymodel import build_tiny_model

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture
def toy_config(tiny_model_dir):
    """A small GRPO config on the toy addition task (every sum 7) with the session's tiny model."""
    from mara_bench.trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig

    return TrainConfig(
        model=ModelConfig(path=str(tiny_model_dir)),
        task=TaskConfig(args={"n_prompts": 32, "seed": 0, "total": 7}),
        rollout=RolloutConfig(prompts_per_step=4, group_size=4, max_tokens=6),
        optim=OptimConfig(lr=1e-2),
        steps=3,
        save_every=0,
    )
