"""Optimizer-state offload: AdamW's moments live in CPU memory between optimizer steps and visit the parameters'
device only for the step (``optim.offload_optimizer``). The values are copied, never rounded, so the updates are
the ones an optimizer kept on the device makes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def _move_state(optimizer: torch.optim.Optimizer, to_parameter: bool) -> None:
    """Every state tensor of ``optimizer`` to its parameter's device (``to_parameter``) or to the CPU. The step
    counters stay where the optimizer keeps them (the CPU unless it is fused or capturable)."""
    for parameter, state in optimizer.state.items():
        device = parameter.device if to_parameter else torch.device("cpu")
        for name, value in state.items():
            if name != "step" and isinstance(value, torch.Tensor):
                state[name] = value.to(device, non_blocking=False)


@contextmanager
def optimizer_on_device(optimizer: torch.optim.Optimizer, offload: bool) -> Iterator[None]:
    """Inside the block the optimizer's state is on its parameters' devices; with ``offload`` it is moved there
    on entry and back to the CPU on exit (new state the step creates included)."""
    if not offload:
        yield
        return
    _move_state(optimizer, to_parameter=True)
    try:
        yield
    finally:
        _move_state(optimizer, to_parameter=False)
