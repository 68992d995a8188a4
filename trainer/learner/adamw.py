"""AdamW with torch's fused kernel wherever it applies: one pass over each parameter's state instead of the
``foreach`` path's several (what TRL's trainer steps with by default, ``adamw_torch_fused``;
docs/experiments/trainer-throughput.md has its cost). FSDP's sharded parameters (``DTensor``) and parameters off
the CPU and CUDA, or not floating point, keep the ``foreach`` path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch.distributed.tensor import DTensor

FUSED_DEVICES = ("cpu", "cuda")


def fused_applies(parameters: Iterable[torch.Tensor]) -> bool:
    """Whether torch's fused AdamW can step every one of ``parameters``."""
    return all(
        not isinstance(p, DTensor) and p.device.type in FUSED_DEVICES and p.is_floating_point()
        for p in parameters
    )


def adamw(groups: list[dict[str, Any]], **settings: Any) -> torch.optim.AdamW:
    """``torch.optim.AdamW(groups, **settings)``, fused when ``fused_applies`` to the groups' parameters."""
    fused = fused_applies(p for group in groups for p in group["params"])
    # None, not False, where fused does not apply: torch takes an explicit False to mean "neither fused nor
    # foreach" and steps tensor by tensor
    return torch.optim.AdamW(groups, **settings, fused=True if fused else None)
