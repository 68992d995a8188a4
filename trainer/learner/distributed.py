"""Data parallelism over torch.distributed: gloo on CPU, NCCL on GPU, started by ``torchrun`` (or alone).

Each rank rolls out its share of the questions and trains on the samples it made. The losses divide by GLOBAL
token/row counts, so SUMMING the ranks' gradients gives exactly the single-process gradient; counts and the
metrics' sums are summed the same way. Two ways to hold the model (``parallel`` in the recipe):

* ``replicate``: every rank holds the whole model, optimizer state included; gradients are all-reduced.
* ``fsdp``: FSDP2 (``torch.distributed.fsdp.fully_shard``) shards parameters, gradients and optimizer state
  across ranks, one FSDP unit per decoder layer plus the root. Gradients are reduce-scattered with SUM (the
  divide factor is set to 1). Works with gloo on CPU as with NCCL on GPU.

FSDP runs collectives inside every forward and backward, so all ranks must make the same passes. Passes whose
number differs between ranks -- token-by-token generation, no-grad scoring -- run inside ``gathered(model)``,
which all-gathers the parameters once and keeps them gathered; the training loop pads every rank to the same
number of micro-batches (``most``). With one process both modes are the plain model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.fsdp import FSDPModule, fully_shard

PARALLEL_MODES = ("replicate", "fsdp")
FULL_STATE = StateDictOptions(full_state_dict=True, cpu_offload=True)
"""Whole (unsharded) tensors on CPU, on rank 0 (the others get empty dicts): what checkpoints and exports store."""


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    parallel: str = "replicate"

    @classmethod
    def from_env(cls, parallel: str = "replicate") -> Distributed:
        """Join the process group torchrun describes (``WORLD_SIZE`` > 1), else a single process."""
        if parallel not in PARALLEL_MODES:
            raise ValueError(f"parallel must be one of {', '.join(PARALLEL_MODES)}, got {parallel!r}")
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        if world_size == 1:
            return cls(parallel=parallel)
        if not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return cls(rank=dist.get_rank(), world_size=dist.get_world_size(), parallel=parallel)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def sharded(self) -> bool:
        """True when the models are FSDP-sharded (``fsdp`` with more than one process)."""
        return self.parallel == "fsdp" and self.world_size > 1

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

    def largest(self, values: list[float]) -> list[float]:
        """Element-wise maximum of ``values`` over ranks."""
        if self.world_size == 1:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    def most(self, value: int) -> int:
        """The largest ``value`` any rank holds."""
        if self.world_size == 1:
            return value
        tensor = torch.tensor([value], dtype=torch.int64)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return int(tensor.item())

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    # ---- models -------------------------------------------------------------------------------------------

    def prepare(self, model: torch.nn.Module) -> torch.nn.Module:
        """``model`` ready for this mode: FSDP-sharded per decoder layer and at the root, or as it is."""
        if not self.sharded:
            return model
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cuda" if torch.cuda.is_available() else "cpu", (self.world_size,))
        layer_classes = set(getattr(model, "_no_split_modules", None) or ())
        for module in model.modules():
            if type(module).__name__ in layer_classes:
                fully_shard(module, mesh=mesh)
        fully_shard(model, mesh=mesh)
        for module in model.modules():
            if isinstance(module, FSDPModule):
                module.set_gradient_divide_factor(1.0)  # sum, not mean: the losses use global counts
                module.set_force_sum_reduction_for_comms(True)  # plain SUM (gloo has no PREMUL_SUM)
        return model

    @contextmanager
    def gathered(self, *models: torch.nn.Module | None) -> Iterator[None]:
        """Keep the FSDP models' parameters all-gathered inside the block, so forwards need no collective."""
        units = [
            m for model in models if model is not None for m in model.modules() if isinstance(m, FSDPModule)
        ]
        if not self.sharded or not units:
            yield
            return
        for model in models:
            if isinstance(model, FSDPModule):
                model.set_reshard_after_forward(False)
        for unit in units:
            unit.unshard()
        try:
            yield
        finally:
            for unit in units:
                unit.reshard()
            for model in models:
                if isinstance(model, FSDPModule):
                    model.set_reshard_after_forward(True)

    def sum_gradients(self, parameters: list[torch.nn.Parameter]) -> None:
        """Sum every parameter's gradient over ranks, in place (FSDP's reduce-scatter already did)."""
        if self.world_size == 1 or self.sharded:
            return
        for parameter in parameters:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            dist.all_reduce(parameter.grad)

    # ---- checkpoints --------------------------------------------------------------------------------------

    def model_state(self, model: torch.nn.Module) -> dict[str, Any]:
        """The whole model's state dict (sharded: a collective every rank calls; only rank 0 gets the tensors)."""
        return get_model_state_dict(model, options=FULL_STATE) if self.sharded else model.state_dict()

    def load_model_state(self, model: torch.nn.Module, state: dict[str, Any]) -> None:
        """Load a whole-model state dict (every rank, each taking its shard when sharded)."""
        if self.sharded:
            set_model_state_dict(model, state, options=FULL_STATE)
        else:
            model.load_state_dict(state)

    def optimizer_state(self, models: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The optimizer's whole state; ``models`` holds every parameter it steps (a collective when sharded)."""
        if self.sharded:
            return get_optimizer_state_dict(models, optimizer, options=FULL_STATE)
        return optimizer.state_dict()

    def load_optimizer_state(
        self, models: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]
    ) -> None:
        if self.sharded:
            set_optimizer_state_dict(models, optimizer, state, options=FULL_STATE)
        else:
            optimizer.load_state_dict(state)
