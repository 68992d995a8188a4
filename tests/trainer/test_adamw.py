"""The trainer's AdamW: fused where torch's fused kernel applies, the ``foreach`` path elsewhere, and the same
steps either way (to float rounding)."""

from __future__ import annotations

import torch

from mara_bench.trainer.learner.adamw import adamw, fused_applies


def _parameters(seed: int) -> list[torch.nn.Parameter]:
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.nn.Parameter(torch.randn(shape, generator=generator)) for shape in [(64, 32), (32,), (7, 5, 3)]
    ]


def test_fused_applies_to_floating_parameters_on_the_cpu_only():
    assert fused_applies(_parameters(0))
    assert not fused_applies([*_parameters(0), torch.zeros(3, dtype=torch.long)])
    assert not fused_applies([torch.nn.Parameter(torch.empty(4, device="meta"))])


def test_fused_and_foreach_adamw_take_the_same_steps():
    fused_params, foreach_params = _parameters(1), _parameters(1)
    fused = adamw([{"params": fused_params, "lr": 1e-2}], betas=(0.9, 0.99), weight_decay=0.1)
    foreach = torch.optim.AdamW([{"params": foreach_params, "lr": 1e-2}], betas=(0.9, 0.99), weight_decay=0.1)
    assert fused.defaults["fused"] and not foreach.defaults["fused"]
    generator = torch.Generator().manual_seed(2)
    for _ in range(5):
        for a, b in zip(fused_params, foreach_params, strict=True):
            a.grad = torch.randn(a.shape, generator=generator)
            b.grad = a.grad.clone()
        fused.step()
        foreach.step()
    for a, b, start in zip(fused_params, foreach_params, _parameters(1), strict=True):
        assert (a - start).abs().max() > 1e-2  # they moved
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_the_trainer_steps_its_cpu_policy_with_the_fused_kernel(tiny_model_dir, tmp_path):
    from mara_bench.trainer.config import ModelConfig, RolloutConfig, TaskConfig, TrainConfig
    from mara_bench.trainer.run.engine import Trainer

    config = TrainConfig(
        model=ModelConfig(path=str(tiny_model_dir)),
        task=TaskConfig(args={"n_prompts": 4, "total": 7}),
        rollout=RolloutConfig(prompts_per_step=2, group_size=2, max_tokens=4),
    )
    assert Trainer(config, tmp_path / "run").updater.optimizer.defaults["fused"]
