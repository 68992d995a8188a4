"""Where our decode engine spends its time: ``torch.profiler`` over one ``generate`` of N greedy prompts.

Run (a checkpoint directory, a dtype, concurrencies): ``python benchmarks/profile_engine.py DIR float32 8,32``;
the 76M shape is ``mara tiny-model DIR --hidden-size 2048``. Prints tokens per CPU-second of an unprofiled run,
then the profiler's table by self CPU time. One torch thread, as ``local/`` runs on the CPU by default.
"""

from __future__ import annotations

import sys
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import generate
from mara_bench.harness.providers.sampling import Sampling

NEW_TOKENS = 32


def main(model_dir: str, dtype: str, concurrencies: str) -> None:
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype)).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    print(f"attention: {model.config._attn_implementation}")
    sampling = Sampling(max_tokens=NEW_TOKENS, temperature=0)
    prompts = [
        render_prompt(tokenizer, [{"role": "user", "content": f"Question {i}: what is {i} + {i}?"}])
        for i in range(max(int(n) for n in concurrencies.split(",")))
    ]
    generate(model, tokenizer, prompts[:2], sampling)  # warm-up
    for n in (int(part) for part in concurrencies.split(",")):
        cpu = time.process_time()
        tokens = sum(len(done.response_ids) for done in generate(model, tokenizer, prompts[:n], sampling))
        cpu = time.process_time() - cpu
        print(f"{n} concurrent: {tokens} tokens in {cpu:.2f} CPU-s, {tokens / cpu:.1f} tokens per CPU-second")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            generate(model, tokenizer, prompts[:n], sampling)
        print(
            profile.key_averages().table(
                sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=48
            )
        )


if __name__ == "__main__":
    main(*sys.argv[1:4])
