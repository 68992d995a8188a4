"""The models a run trains and reads: the base weights' path (a tiny model built into the run directory when the
recipe names none), loaded onto this rank's device, sharded when the run is FSDP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from trainer.config import TrainConfig
from trainer.distributed import Distributed


def base_model_path(config: TrainConfig, run_dir: Path, dist: Distributed) -> Path | str:
    """``model.path``, else ``<run>/base-model``, built by rank 0 from the recipe's tiny-model settings."""
    if config.model.path:
        return config.model.path
    path = run_dir / "base-model"
    if dist.is_main and not (path / "config.json").exists():
        from harness.tinymodel import build_tiny_model

        model = config.model
        build_tiny_model(path, arch=model.tiny_arch, seed=config.seed, hidden_size=model.tiny_hidden_size)
    dist.barrier()
    return path


def load_model(
    cls: Any,
    path: Path | str,
    dtype: torch.dtype,
    dist: Distributed,
    device: torch.device | None,
    **kwargs: Any,
) -> torch.nn.Module:
    """Load a model onto this rank's device, sharded when the run is FSDP."""
    model = cls.from_pretrained(path, dtype=dtype, **kwargs)
    return dist.prepare(model.to(device) if device is not None else model)
