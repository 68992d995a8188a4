"""The rollout engine's KV cache under an M-ASK-like workload: does it follow the live rows or the whole run?

``--episodes`` episodes decode concurrently on one ``DecodeBatch`` (as the trainer's continuous scheduler drives
it); each makes ``--calls`` sequential calls, the next prompt being the last one plus its reply plus ``--grow``
more tokens (the trajectory), and joins the running batch as soon as its previous call finished. Every
``--every`` decode steps it prints the cache's slots, columns, window, the bytes of its buffers (tensors' nbytes;
tracemalloc does not see torch) and the process's resident memory; at the end the peaks.

Run in the checkout: ``PYTHONPATH=. python benchmarks/kv_cache_growth.py --model DIR [--episodes 16] [--calls 9]``.
"""

from __future__ import annotations

import argparse
import random
import resource
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mara_bench.harness.providers.generation import DecodeBatch
from mara_bench.harness.providers.kv_slots import SlotCache
from mara_bench.harness.providers.sampling import Sampling


def cache_bytes(batch: DecodeBatch) -> int:
    """Bytes of the batch's slot buffers (keys, values and mask); 0 when no slot cache is held."""
    cache = batch.cache
    if not isinstance(cache, SlotCache):
        return 0
    return (
        sum(layer.key_buffer.nbytes + layer.value_buffer.nbytes for layer in cache.layers) + cache.mask.nbytes
    )


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model directory (transformers format)")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--calls", type=int, default=9, help="sequential calls per episode")
    parser.add_argument("--prompt", type=int, default=120, help="first prompt's tokens")
    parser.add_argument("--grow", type=int, default=30, help="tokens added to the prompt after each reply")
    parser.add_argument("--max-tokens", type=int, default=72)
    parser.add_argument("--every", type=int, default=40, help="print every this many decode steps")
    args = parser.parse_args()
    rng = random.Random(0)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    vocab = min(model.config.vocab_size, 1000)

    def tokens(count: int) -> list[int]:
        return [rng.randrange(100, vocab) for _ in range(count)]

    prompts = {e: tokens(args.prompt + rng.randrange(40)) for e in range(args.episodes)}
    calls = dict.fromkeys(prompts, 0)
    batch, waiting = DecodeBatch(model, tokenizer), list(prompts)
    steps, peak_cache, peak_rss, start = 0, 0, 0.0, time.monotonic()
    while waiting or batch.rows:
        if waiting:
            settings = [
                Sampling(max_tokens=args.max_tokens, temperature=0.5, seed=100 * e + calls[e])
                for e in waiting
            ]
            batch.admit(waiting, [prompts[e] for e in waiting], settings, [0] * len(waiting))
            waiting = []
        batch.step()
        steps += 1
        for e, done in batch.take_finished():
            calls[e] += 1
            prompts[e] = prompts[e] + done.response_ids + tokens(args.grow)
            if calls[e] < args.calls:
                waiting.append(e)
        peak_cache, peak_rss = max(peak_cache, cache_bytes(batch)), max(peak_rss, resident_mib())
        if steps % args.every == 0 and isinstance(batch.cache, SlotCache):
            cache, longest = batch.cache, max(row.cached for row in batch.rows)
            print(
                f"step {steps}: rows {len(batch.rows)} slots {cache.slots} columns {cache.columns} "
                f"window {cache.window.hi - cache.window.lo} longest row {longest} "
                f"cache {cache_bytes(batch) / 2**20:.1f} MiB rss {resident_mib():.0f} MiB",
                flush=True,
            )
    print(
        f"{steps} steps in {time.monotonic() - start:.0f} s: peak cache {peak_cache / 2**20:.1f} MiB, "
        f"peak rss {peak_rss:.0f} MiB, longest prompt {max(len(p) for p in prompts.values())} tokens"
    )


if __name__ == "__main__":
    main()
