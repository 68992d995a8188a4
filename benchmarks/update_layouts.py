"""CPU-seconds of the update's forward + backward over one batch of rows in each micro-batch layout.

Builds ``PROMPTS`` random prompts of about ``PROMPT`` tokens (lengths ``PROMPT`` to ``PROMPT + 2``), ``GROUP``
rows each with random responses of 4 to ``RESPONSE`` tokens (fixed seed), lays them out in ``bucket`` and
``shared-prefix`` (token budget 4096, padding bound 0.1, as ``optim`` defaults), and times the training forward
(``response_scores`` with entropies) and its backward on one torch thread: one unmeasured pass per layout, then
``ROUNDS`` interleaved passes; prints each layout's median CPU-seconds, micro-batches and computed slots. Run from
``benchmarks/``:
``OMP_NUM_THREADS=1 PYTHONPATH=..:. python update_layouts.py MODEL_DIR PROMPTS GROUP PROMPT RESPONSE ROUNDS``.
"""

from __future__ import annotations

import sys
import time

import torch
from transformers import AutoModelForCausalLM

from mara_bench.core.samples import Sample
from mara_bench.trainer.learner.logprobs import response_scores
from mara_bench.trainer.learner.packing import micro_batches

LAYOUTS = ("bucket", "shared-prefix")


def rows(prompts: int, group: int, prompt: int, response: int) -> list[Sample]:
    """``prompts`` x ``group`` rows with random tokens, each group sharing its prompt."""
    g = torch.Generator().manual_seed(0)

    def ids(length: int) -> list[int]:
        return torch.randint(3, 500, (length,), generator=g).tolist()

    samples = []
    for question in range(prompts):
        shared = ids(prompt + question % 3)
        for _ in range(group):
            length = int(torch.randint(4, response + 1, (1,), generator=g))
            samples.append(Sample(prompt_ids=shared, response_ids=ids(length), loss_mask=[1] * length))
    return samples


def update_pass(model, samples: list[Sample], layout: str) -> tuple[float, int, int]:
    """CPU-seconds of one forward + backward over ``samples`` in ``layout``, its micro-batches and slots."""
    batches = micro_batches(samples, 4096, layout, 0.1)
    start = time.process_time()
    for batch in batches:
        scores = response_scores(model, batch, 1.0, with_entropy=True)
        (scores.logprobs.sum() - 0.01 * scores.entropy.sum()).backward()
    seconds = time.process_time() - start
    model.zero_grad(set_to_none=True)
    return seconds, len(batches), sum(batch.slots for batch in batches)


def main(model_dir: str, prompts: int, group: int, prompt: int, response: int, rounds: int) -> None:
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).train()
    samples = rows(prompts, group, prompt, response)
    for layout in LAYOUTS:
        update_pass(model, samples, layout)
    runs: dict[str, list[tuple[float, int, int]]] = {layout: [] for layout in LAYOUTS}
    for _ in range(rounds):
        for layout in LAYOUTS:
            runs[layout].append(update_pass(model, samples, layout))
    for layout, results in runs.items():
        seconds = sorted(result[0] for result in results)
        _, count, slots = results[0]
        print(
            f"{layout}: median {seconds[len(seconds) // 2]:.3f} CPU-s, {count} micro-batches, {slots} slots"
        )


if __name__ == "__main__":
    model_dir, *numbers = sys.argv[1:]
    main(model_dir, *map(int, numbers))
