"""Generation engines side by side: ``local/`` through vLLM vs our transformers engine vs plain HF ``generate``.

Needs the vllm package (its CPU build in ``.venv-vllm``); skipped without it. Two checkpoints from
``mara tiny-model``: ``--hidden-size 256`` (1.4M parameters, 6 MB) and ``--hidden-size 2048`` (76M parameters,
300 MB). Each case sends N concurrent greedy requests (``NEW_TOKENS`` new tokens at most) and counts the output
tokens per wall-clock second. ``ROUNDS`` interleaved pairs (``benchmarks/_pairs.py``) give per-pair ratios of
our engine over vLLM and over plain ``generate`` (a left-padded batch of the N prompts), min/median/max, printed
and kept in ``extra_info``, never asserted. All three decode the same greedy tokens (``tests/vllm_engines``).

``test_trainer_rollout_per_backend``: a trainer on the toy task with ``rollout.backend: hf`` and one with
``vllm`` (each a 256-hidden policy, 8 episodes of 16 tokens per step), rollout tokens per second of a step,
in interleaved pairs. Run:
``VLLM_CPU_KVCACHE_SPACE=1 .venv-vllm/bin/python -m pytest benchmarks/bench_vllm.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest
import torch
from _pairs import interleaved_pairs, ratio_spread
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.backends import vllm_ready
from mara_bench.harness.tinymodel import build_tiny_model

pytestmark = pytest.mark.skipif(
    not vllm_ready(), reason="needs the vllm package (bash scripts/setup.sh --vllm)"
)

NEW_TOKENS = 32
CONFIG = GenerateConfig(max_tokens=NEW_TOKENS, temperature=0)
ROUNDS = 3
SIZES = {"tiny-256": 256, "76M": 2048}


def _question(i: int) -> str:
    return f"Question {i}: what is {i} + {i}?"


@pytest.fixture(scope="module")
def loop():
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


@pytest.fixture(scope="module", params=list(SIZES))
def engines(request, tmp_path_factory):
    """One checkpoint of each size, served three ways."""
    path = build_tiny_model(tmp_path_factory.mktemp(request.param), hidden_size=SIZES[request.param])
    vllm = get_model(f"local/{path}", backend="vllm", max_model_len=1024, seed=0, memoize=False)
    ours = get_model(f"local/{path}", backend="hf", batch_size=64, memoize=False)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    plain = AutoModelForCausalLM.from_pretrained(path).eval()
    return request.param, vllm, ours, (plain, tokenizer)


def local_rate(model, concurrent: int, loop: asyncio.AbstractEventLoop) -> float:
    """Output tokens per second of ``concurrent`` simultaneous requests to a ``local/`` model."""

    async def burst() -> int:
        prompts = [[ChatMessageUser(content=_question(i))] for i in range(concurrent)]
        outputs = await asyncio.gather(*(model.generate(p, config=CONFIG) for p in prompts))
        return sum(o.usage.output_tokens for o in outputs)

    started = time.perf_counter()
    tokens = loop.run_until_complete(burst())
    return tokens / (time.perf_counter() - started)


def plain_rate(plain: tuple, concurrent: int) -> float:
    """Output tokens per second of plain ``generate`` on the ``concurrent`` prompts as one left-padded batch."""
    model, tokenizer = plain
    prompts = [
        render_prompt(tokenizer, [{"role": "user", "content": _question(i)}]) for i in range(concurrent)
    ]
    width = max(map(len, prompts))
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    started = time.perf_counter()
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, do_sample=False)
    elapsed = time.perf_counter() - started
    new = out[:, width:]
    ended = (new == tokenizer.eos_token_id).int().cumsum(-1)
    tokens = int(((ended == 0) | ((ended == 1) & (new == tokenizer.eos_token_id))).sum())
    return tokens / elapsed


@pytest.mark.parametrize("concurrent", [1, 8, 32, 64])
def test_local_engines_tokens_per_second(benchmark, engines, loop, concurrent):
    name, vllm, ours, plain = engines
    for warm in (
        lambda: local_rate(vllm, 2, loop),
        lambda: local_rate(ours, 2, loop),
        lambda: plain_rate(plain, 2),
    ):
        warm()
    pairs_vllm = benchmark.pedantic(
        interleaved_pairs,
        args=(lambda: local_rate(ours, concurrent, loop), lambda: local_rate(vllm, concurrent, loop), ROUNDS),
        rounds=1,
        iterations=1,
    )
    pairs_plain = interleaved_pairs(
        lambda: local_rate(ours, concurrent, loop), lambda: plain_rate(plain, concurrent), ROUNDS
    )
    over_vllm = ratio_spread(pairs_vllm, lambda p: p.ours / p.baseline)
    over_plain = ratio_spread(pairs_plain, lambda p: p.ours / p.baseline)
    rates = {
        "ours_tok_s": statistics.median(p.ours for p in pairs_vllm + pairs_plain),
        "vllm_tok_s": statistics.median(p.baseline for p in pairs_vllm),
        "plain_tok_s": statistics.median(p.baseline for p in pairs_plain),
    }
    benchmark.extra_info.update(
        model=name,
        concurrent=concurrent,
        ours_over_vllm=over_vllm.as_dict(),
        ours_over_plain=over_plain.as_dict(),
    )
    benchmark.extra_info.update(rates)
    print(
        f"\n{name} x{concurrent}: medians ours {rates['ours_tok_s']:.0f} tok/s, vLLM {rates['vllm_tok_s']:.0f}, "
        f"plain generate {rates['plain_tok_s']:.0f}; ours/vLLM min/median/max {over_vllm}; "
        f"ours/plain {over_plain}"
    )


def test_trainer_rollout_per_backend(benchmark, tmp_path_factory):
    from mara_bench.trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
    from mara_bench.trainer.run.engine import Trainer

    path = build_tiny_model(tmp_path_factory.mktemp("rollout-256"), hidden_size=256)

    def trainer(backend: str) -> Trainer:
        config = TrainConfig(
            model=ModelConfig(path=str(path), dtype="float32"),
            task=TaskConfig(args={"n_prompts": 64, "seed": 0, "total": 7}),
            rollout=RolloutConfig(prompts_per_step=2, group_size=4, max_tokens=16, backend=backend),
            optim=OptimConfig(lr=1e-3),
        )
        return Trainer(config, tmp_path_factory.mktemp(f"run-{backend}"))

    hf, vllm = trainer("hf"), trainer("vllm")

    def rollout_rate(run: Trainer) -> float:
        metrics = run.train_step()
        return sum(len(s.response_ids) for s in run.last_rewarded) / (
            metrics["time_sync"] + metrics["time_rollout"]
        )

    rollout_rate(hf), rollout_rate(vllm)  # warm-up
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(lambda: rollout_rate(hf), lambda: rollout_rate(vllm), ROUNDS),
        rounds=1,
        iterations=1,
    )
    spread = ratio_spread(pairs, lambda p: p.ours / p.baseline)
    hf_rate, vllm_rate = (
        statistics.median(p.ours for p in pairs),
        statistics.median(p.baseline for p in pairs),
    )
    benchmark.extra_info.update(hf_tok_s=hf_rate, vllm_tok_s=vllm_rate, hf_over_vllm=spread.as_dict())
    print(
        f"\ntrainer rollout: medians hf {hf_rate:.0f} tok/s, vLLM {vllm_rate:.0f}; hf/vLLM min/median/max {spread}"
    )
