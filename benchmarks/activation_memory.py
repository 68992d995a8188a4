"""What one training forward keeps for the backward pass, per token: the policy (a causal LM) and M-ASK's critic
(the same base with a one-label token-classification head).

Counts the distinct storages autograd saves during one forward (``torch.autograd.graph.saved_tensors_hooks``),
less the parameters, and the output logits; no backward is run, so it is cheap enough for a loaded machine.
The figures scale linearly with the tokens of a micro-batch (rows of ``--length`` tokens; attention's
quadratic part is small at these lengths).

Run in the checkout: ``PYTHONPATH=. python benchmarks/activation_memory.py --model DIR [--rows 2] [--length 128]``.
"""

from __future__ import annotations

import argparse

import torch
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification


def saved_bytes(model: torch.nn.Module, input_ids: torch.Tensor) -> tuple[int, int]:
    """Bytes autograd saves in one forward of ``model`` (parameters excluded), and the output logits' bytes."""
    storages: dict[int, int] = {}

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        logits = model(input_ids=input_ids, use_cache=False).logits
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    return sum(size for ptr, size in storages.items() if ptr not in weights), logits.nbytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model directory (transformers format)")
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--length", type=int, default=128)
    args = parser.parse_args()
    torch.manual_seed(0)
    input_ids = torch.randint(100, 1000, (args.rows, args.length))
    tokens = input_ids.numel()
    for name, loader, options in (
        ("policy", AutoModelForCausalLM, {}),
        ("critic", AutoModelForTokenClassification, {"num_labels": 1}),
    ):
        model = loader.from_pretrained(args.model, dtype=torch.float32, **options).train()
        saved, logits = saved_bytes(model, input_ids)
        print(
            f"{name}: {tokens} tokens, attention {model.config._attn_implementation}: saved {saved / 2**20:.0f} MiB "
            f"({saved / tokens / 1024:.0f} KiB a token), logits {logits / 2**20:.1f} MiB"
        )


if __name__ == "__main__":
    main()
