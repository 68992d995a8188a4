"""A tiny policy-gradient problem shared by the aggregation-invariance tests, and their gloo worker process.

The worker lives in an importable module (not the test file) so ``torch.multiprocessing.spawn`` can find it.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist
from torch import Tensor

from mara_bench.trainer.algorithms.losses import AGGREGATIONS, aggregate, kl, loss_counts, policy_loss

ROWS, TOKENS, FEATURES, VOCAB = 8, 6, 5, 7
NORM_LENGTH = 16
"""The constant length ``seq-mean-token-sum-norm`` divides by (a 'max response length')."""

ROW_LENGTHS = [6, 3, 5, 0, 2, 6, 1, 4]
"""Unmasked tokens per row: different lengths, and row 3 has none (e.g. a call made only of tool tokens)."""


def make_problem(seed: int = 0) -> tuple[torch.nn.Linear, dict[str, Tensor]]:
    """A linear policy over per-token features, and a batch with sampled tokens, old/ref logprobs, advantages."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Linear(FEATURES, VOCAB)
    features = torch.randn(ROWS, TOKENS, FEATURES, generator=generator)
    actions = torch.randint(VOCAB, (ROWS, TOKENS), generator=generator)
    mask = (torch.arange(TOKENS) < torch.tensor(ROW_LENGTHS).unsqueeze(-1)).float()
    with torch.no_grad():
        current = token_logprobs(model, features, actions)
    batch = {
        "features": features,
        "actions": actions,
        "mask": mask,
        # old logprobs up to ±0.6 away so that both clip branches and the dual clip are exercised
        "old_logprob": current + 1.2 * (torch.rand(ROWS, TOKENS, generator=generator) - 0.5),
        "ref_logprob": current + 0.3 * torch.randn(ROWS, TOKENS, generator=generator),
        "advantages": torch.randn(ROWS, generator=generator),
    }
    return model, batch


def token_logprobs(model: torch.nn.Linear, features: Tensor, actions: Tensor) -> Tensor:
    """``(B, T)`` logprobs of the chosen tokens under the linear policy."""
    return torch.log_softmax(model(features), dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)


def rows_of(batch: dict[str, Tensor], rows: slice, trim: bool = True) -> dict[str, Tensor]:
    """A row slice of the batch; ``trim`` cuts the padding columns past the part's longest row."""
    part = {name: value[rows] for name, value in batch.items()}
    if trim:
        width = max(int(part["mask"].sum(dim=-1).max()), 1)
        part = {name: value[:, :width] if value.dim() >= 2 else value for name, value in part.items()}
    return part


def part_loss(
    model: torch.nn.Linear, part: dict[str, Tensor], mode: str, global_tokens: int, global_rows: int
) -> Tensor:
    """Policy loss plus a k3 KL term, both aggregated with the WHOLE batch's counts."""
    logprob = token_logprobs(model, part["features"], part["actions"])
    counts = {"global_tokens": global_tokens, "global_rows": global_rows, "norm_length": NORM_LENGTH}
    surrogate, _ = policy_loss(
        part["old_logprob"], logprob, part["advantages"], part["mask"], clip_high=0.28, mode=mode, **counts
    )
    return surrogate + 0.1 * aggregate(kl(logprob, part["ref_logprob"], "k3"), part["mask"], mode, **counts)


def gloo_worker(rank: int, world_size: int, port: int, out_dir: str) -> None:
    """One data-parallel rank: its half of the rows, global counts by all-reduce, gradients summed across ranks."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    try:
        torch.set_num_threads(1)
        model, batch = make_problem()
        share = ROWS // world_size
        part = rows_of(batch, slice(rank * share, (rank + 1) * share))
        counts = torch.tensor(loss_counts(part["mask"]))
        dist.all_reduce(counts, op=dist.ReduceOp.SUM)
        results = {}
        for mode in AGGREGATIONS:
            model.zero_grad()
            loss = part_loss(model, part, mode, int(counts[0]), int(counts[1]))
            loss.backward()
            total = loss.detach().clone()
            dist.all_reduce(total, op=dist.ReduceOp.SUM)
            grads = [p.grad.clone() for p in model.parameters()]
            for grad in grads:
                dist.all_reduce(grad, op=dist.ReduceOp.SUM)
            results[mode] = {"loss": total, "grads": grads}
        if rank == 0:
            torch.save(results, Path(out_dir) / "gloo_results.pt")
    finally:
        dist.destroy_process_group()
