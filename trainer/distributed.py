"""Data parallelism over torch.distributed: gloo on CPU, NCCL on GPU, started by ``torchrun`` (or alone).

Each rank rolls out its share of the questions and holds a full replica of the model. Gradients are summed
across ranks (the losses divide by GLOBAL token/row counts, so summing gives exactly the single-process
gradient), and so are the counts and the metrics' sums.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1

    @classmethod
    def from_env(cls) -> Distributed:
        """Join the process group torchrun describes (``WORLD_SIZE`` > 1), else a single process."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls()
        if not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return cls(rank=dist.get_rank(), world_size=dist.get_world_size())

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, items: list) -> list:
        """This rank's share of ``items`` (round-robin)."""
        return items[self.rank :: self.world_size]

    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sum of ``values`` over ranks."""
        if self.world_size == 1:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def sum_gradients(self, parameters: list[torch.nn.Parameter]) -> None:
        """Sum every parameter's gradient over ranks, in place."""
        if self.world_size == 1:
            return
        for parameter in parameters:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            dist.all_reduce(parameter.grad)

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()
