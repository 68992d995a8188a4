"""Build a tiny, randomly initialised chat model and byte-level BPE tokenizer offline (``mara tiny-model DIR``).

The model is a real Qwen2- or Llama-architecture causal LM (hidden 32 by default, 2 layers, 4 heads, 2 KV heads)
saved in Hugging Face format with a ChatML chat template (tools supported), so every code path that loads a
checkpoint -- the ``local/`` provider, the trainer, the demo -- runs end to end in about a second with no network.
The output is meaningless text; the point is the plumbing. The same ``seed`` always gives the same files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

CONTEXT_LENGTH = 32768
"""Context window the tiny model declares: its rotary positions cost nothing, and the verbatim V-C verifier and
MATPO planner/worker prompts alone take about 3,000 of its byte-level tokens."""

ARCHITECTURES = ("qwen2", "llama")

PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

# Training text for the BPE merges: chat markup, maths and QA phrasing like the bundled benchmarks use.
CORPUS = """\
<|im_start|>system
You are a helpful assistant. Think step by step and put the final answer in \\boxed{}.<|im_end|>
<|im_start|>user
Question: Find the number of ordered pairs (x, y) of integers such that 12x^2 - xy - 6y^2 = 0.<|im_end|>
<|im_start|>assistant
<think>
Let me factor the quadratic form. The answer is an integer between 0 and 999.
</think>
The answer is \\boxed{117}.<|im_end|>
<|im_start|>user
Who was the president of the United States when the first person walked on the Moon?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "search", "arguments": {"query": "first Moon landing 1969 president"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
Apollo 11 landed on July 20, 1969, during the presidency of Richard Nixon.
</tool_response><|im_end|>
<|im_start|>assistant
<answer>Richard Nixon</answer><|im_end|>
The quick brown fox jumps over the lazy dog. Solve for the remainder when 2^{100} is divided by 7.
Therefore, the final answer is 2. ANSWER: 42. Evidence, purpose, summary, verify, correct, wrong.
"""

CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n\\nYou may call functions. Their signatures:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools>\\nCall one with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>.<|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}
{%- for call in message.tool_calls or [] %}
{{- '\\n<tool_call>\\n{\"name\": \"' + call.function.name + '\", \"arguments\": ' + (call.function.arguments | tojson) + '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""


def train_tokenizer(vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``CORPUS``, wrapped as a ``PreTrainedTokenizerFast``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([CORPUS], trainer=trainer)
    # <think> markers are ordinary added tokens: decoding keeps them in the text (as real thinking models do).
    tokenizer.add_tokens([AddedToken(THINK_OPEN, special=False), AddedToken(THINK_CLOSE, special=False)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        eos_token=IM_END,
        bos_token=None,
        additional_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        model_max_length=CONTEXT_LENGTH,
    )


def tiny_config(
    arch: str,
    vocab_size: int,
    pad_id: int,
    eos_id: int,
    max_positions: int = CONTEXT_LENGTH,
    hidden_size: int = 32,
):
    """The transformers config of the tiny model (about 30k parameters at the default ``hidden_size``)."""
    from transformers import LlamaConfig, Qwen2Config

    if arch not in ARCHITECTURES:
        raise ValueError(
            f"unknown tiny-model architecture {arch!r}; choose one of {', '.join(ARCHITECTURES)}"
        )
    config_class = Qwen2Config if arch == "qwen2" else LlamaConfig
    return config_class(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        initializer_range=0.2,  # large enough that greedy decoding is not a near-tie between tokens
        tie_word_embeddings=False,
        pad_token_id=pad_id,
        eos_token_id=eos_id,
        bos_token_id=None,
    )


def build_tiny_model(out_dir: str | Path, arch: str = "qwen2", seed: int = 0, hidden_size: int = 32) -> Path:
    """Write a tiny ``arch`` model + tokenizer + generation config to ``out_dir`` (HF format) and return it.

    The default ``hidden_size`` gives 4 heads of 8 dimensions; GPU attention kernels (vLLM's) want head sizes
    like 64, which ``hidden_size=256`` gives.
    """
    if hidden_size < 4 or hidden_size % 4:
        raise ValueError(
            f"hidden_size must be a positive multiple of 4 (4 attention heads), got {hidden_size}"
        )
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    tokenizer = train_tokenizer()
    eos_id, pad_id = tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(PAD)
    config = tiny_config(arch, len(tokenizer), pad_id=pad_id, eos_id=eos_id, hidden_size=hidden_size)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id, do_sample=False)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara tiny-model", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="directory to write the model to (created if absent)")
    parser.add_argument("--arch", choices=ARCHITECTURES, default="qwen2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden-size", type=int, default=32, help="256 gives vLLM-friendly 64-dim heads")
    args = parser.parse_args(argv)
    path = build_tiny_model(args.out_dir, arch=args.arch, seed=args.seed, hidden_size=args.hidden_size)
    print(f"tiny {args.arch} model written to {path}")
    return 0
