"""The trainer's AdamW step (``mara_bench.trainer.learner.adamw``: the fused kernel) against the ``foreach`` path it
replaced, on SmolLM2-135M's parameter shapes in float32, one optimizer step a measurement, CPU seconds, in
interleaved pairs (``_pairs``); both sides step copies of the same weights with the same gradients, and end equal
to float rounding (the same work).

    cd benchmarks && OMP_NUM_THREADS=1 PYTHONPATH=..:. ../.venv/bin/python -m pytest bench_adamw.py \
        --benchmark-only -q -s -p no:cacheprovider
"""

from __future__ import annotations

import time

import torch
from _pairs import interleaved_pairs, ratio_spread
from transformers import LlamaConfig, LlamaForCausalLM

from mara_bench.trainer.learner.adamw import adamw

SMOLLM2_SHAPE = LlamaConfig(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    tie_word_embeddings=True,
)
"""SmolLM2-135M's dimensions (its config.json): 134.5M parameters."""
ROUNDS = 6


def stepped(optimizer: torch.optim.Optimizer):
    """One measurement: CPU seconds of one optimizer step."""

    def measure() -> float:
        start = time.process_time()
        optimizer.step()
        return time.process_time() - start

    return measure


def test_fused_adamw_vs_foreach(benchmark):
    torch.manual_seed(0)
    model = LlamaForCausalLM(SMOLLM2_SHAPE)
    ours = [torch.nn.Parameter(p.detach().clone()) for p in model.parameters()]
    base = [torch.nn.Parameter(p.detach().clone()) for p in model.parameters()]
    for a, b in zip(ours, base, strict=True):
        a.grad = torch.randn_like(a) * 1e-3
        b.grad = a.grad.clone()
    settings = {"lr": 1e-5, "betas": (0.9, 0.999), "weight_decay": 0.01}
    fused = adamw([{"params": ours}], **settings)
    foreach = torch.optim.AdamW([{"params": base}], **settings, foreach=True)
    assert fused.defaults["fused"]
    fused.step(), foreach.step()  # the moments' allocation, on both sides
    pairs = benchmark.pedantic(
        interleaved_pairs, args=(stepped(fused), stepped(foreach), ROUNDS), rounds=1, iterations=1
    )
    spread = ratio_spread(pairs, lambda pair: pair.baseline / pair.ours)
    print(
        f"\nAdamW step on {sum(p.numel() for p in ours) / 1e6:.1f}M float32 parameters, {ROUNDS} pairs: "
        f"fused {sorted(p.ours for p in pairs)[ROUNDS // 2]:.3f} CPU-s, foreach "
        f"{sorted(p.baseline for p in pairs)[ROUNDS // 2]:.3f} CPU-s (medians); foreach / fused min/median/max {spread}"
    )
    for a, b in zip(ours, base, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
