"""Generation engines side by side: ``local/`` through vLLM vs our transformers engine vs plain HF ``generate``.

Needs the vllm package (its CPU build in ``.venv-vllm``); skipped without it. Two checkpoints from
``mara tiny-model``: ``--hidden-size 256`` (1.4M parameters, 6 MB) and ``--hidden-size 2048`` (76M parameters,
300 MB), and SmolLM2-135M where it has been converted (``MODELS_DIR``; skipped otherwise), each in float32
and in bfloat16 (``DTYPES``; select with ``-k``), the dtype passed explicitly to every engine (vLLM's CPU build
would otherwise run a float32 checkpoint in bfloat16). Each case sends N concurrent greedy requests (``NEW_TOKENS`` new tokens at most) and counts the
output tokens per CPU-second (``benchmarks/_cpu.py``: vLLM's includes its server process and Inspect's client
side in this one; ours and plain ``generate`` this process's) and per wall-clock second. ``ROUNDS``
interleaved pairs (``benchmarks/_pairs.py``) give per-pair ratios of our engine over vLLM and over plain
``generate`` (a left-padded batch of the N prompts), min/median/max, printed and kept in ``extra_info``, never
asserted. All three decode the same greedy tokens (``tests/vllm_engines``). Each row also prints ``auto``'s
choice for a job of that row's tokens (``mara_bench.harness.providers.backends.choose_backend``).

``test_trainer_rollout_per_backend``: a trainer on the toy task with ``rollout.backend: hf`` and one with
``vllm`` (each a 256-hidden policy, 8 episodes of 16 tokens per step), rollout tokens per second of a step,
in interleaved pairs. Run:
``VLLM_CPU_KVCACHE_SPACE=1 .venv-vllm/bin/python -m pytest benchmarks/bench_vllm.py --benchmark-only -s``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from _cpu import cpu_seconds
from _pairs import interleaved_pairs, ratio_spread
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.backends import choose_backend, vllm_ready
from mara_bench.harness.tinymodel import build_tiny_model

pytestmark = pytest.mark.skipif(
    not vllm_ready(), reason="needs the vllm package (bash scripts/setup.sh --vllm)"
)

NEW_TOKENS = 32
CONFIG = GenerateConfig(max_tokens=NEW_TOKENS, temperature=0)
ROUNDS = 3
START_ROUNDS = 2
DTYPE = "float32"
"""The start-up measurement's dtype."""
DTYPES = ("float32", "bfloat16")
SIZES = {"tiny-256": 256, "76M": 2048}
MODELS_DIR = Path.home() / ".cache" / "mara-bench" / "models"
CONVERTED = ("smollm2-135m",)
"""Real checkpoints measured when present under ``MODELS_DIR`` (``mara`` converts them; never downloaded here)."""


@dataclass(frozen=True)
class Rate:
    """Output tokens of one measurement per CPU-second and per wall-clock second."""

    cpu: float
    wall: float


def _question(i: int) -> str:
    return f"Question {i}: what is {i} + {i}?"


@pytest.fixture(scope="module")
def loop():
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


@pytest.fixture(
    scope="module",
    params=[(name, dtype) for name in (*SIZES, *CONVERTED) for dtype in DTYPES],
    ids=lambda case: "-".join(case),
)
def engines(request, tmp_path_factory):
    """One checkpoint of each size in one dtype, served three ways."""
    name, dtype = request.param
    if name in SIZES:
        path = build_tiny_model(tmp_path_factory.mktemp(name), hidden_size=SIZES[name])
    else:
        path = MODELS_DIR / name
        if not (path / "config.json").is_file():
            pytest.skip(f"{name} is not converted under {MODELS_DIR}")
    vllm = get_model(f"local/{path}", backend="vllm", dtype=dtype, max_model_len=1024, seed=0, memoize=False)
    ours = get_model(f"local/{path}", backend="hf", dtype=dtype, batch_size=64, memoize=False)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    plain = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
    yield name, dtype, path, vllm, ours, (plain, tokenizer)
    vllm.api.close()  # one server at a time


def local_rate(model, concurrent: int, loop: asyncio.AbstractEventLoop, server: bool) -> Rate:
    """Output tokens per second of ``concurrent`` simultaneous requests to a ``local/`` model (``server``: its
    engine runs in a process below this one)."""

    async def burst() -> int:
        prompts = [[ChatMessageUser(content=_question(i))] for i in range(concurrent)]
        outputs = await asyncio.gather(*(model.generate(p, config=CONFIG) for p in prompts))
        return sum(o.usage.output_tokens for o in outputs)

    started, cpu = time.perf_counter(), cpu_seconds(descendants=server)
    tokens = loop.run_until_complete(burst())
    return Rate(tokens / (cpu_seconds(descendants=server) - cpu), tokens / (time.perf_counter() - started))


def plain_rate(plain: tuple, concurrent: int) -> Rate:
    """Output tokens per second of plain ``generate`` on the ``concurrent`` prompts as one left-padded batch."""
    model, tokenizer = plain
    prompts = [
        render_prompt(tokenizer, [{"role": "user", "content": _question(i)}]) for i in range(concurrent)
    ]
    width = max(map(len, prompts))
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    started, cpu = time.perf_counter(), cpu_seconds()
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, do_sample=False)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    new = out[:, width:]
    ended = (new == tokenizer.eos_token_id).int().cumsum(-1)
    tokens = int(((ended == 0) | ((ended == 1) & (new == tokenizer.eos_token_id))).sum())
    return Rate(tokens / cpu, tokens / elapsed)


@pytest.mark.parametrize("concurrent", [1, 8, 32])
def test_local_engines_tokens_per_second(benchmark, engines, loop, concurrent):
    name, dtype, path, vllm, ours, plain = engines
    for warm in (
        lambda: local_rate(vllm, 2, loop, server=True),
        lambda: local_rate(ours, 2, loop, server=False),
        lambda: plain_rate(plain, 2),
    ):
        warm()
    pairs_vllm = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: local_rate(ours, concurrent, loop, server=False),
            lambda: local_rate(vllm, concurrent, loop, server=True),
            ROUNDS,
        ),
        rounds=1,
        iterations=1,
    )
    pairs_plain = interleaved_pairs(
        lambda: local_rate(ours, concurrent, loop, server=False),
        lambda: plain_rate(plain, concurrent),
        ROUNDS,
    )
    row = {"model": name, "dtype": dtype, "concurrent": concurrent}
    for unit in ("cpu", "wall"):
        over_vllm = ratio_spread(pairs_vllm, lambda p, u=unit: getattr(p.ours, u) / getattr(p.baseline, u))
        over_plain = ratio_spread(pairs_plain, lambda p, u=unit: getattr(p.ours, u) / getattr(p.baseline, u))
        row |= {
            f"ours_tok_{unit}_s": statistics.median(getattr(p.ours, unit) for p in pairs_vllm + pairs_plain),
            f"vllm_tok_{unit}_s": statistics.median(getattr(p.baseline, unit) for p in pairs_vllm),
            f"plain_tok_{unit}_s": statistics.median(getattr(p.baseline, unit) for p in pairs_plain),
            f"ours_over_vllm_{unit}": over_vllm.as_dict(),
            f"ours_over_plain_{unit}": over_plain.as_dict(),
        }
        print(
            f"\n{name} {dtype} x{concurrent} per {unit}-second: medians ours {row[f'ours_tok_{unit}_s']:.0f} "
            f"tok, vLLM {row[f'vllm_tok_{unit}_s']:.0f}, plain generate {row[f'plain_tok_{unit}_s']:.0f}; "
            f"ours/vLLM min/median/max {over_vllm}; ours/plain {over_plain}"
        )
    row["auto"] = choose_backend("auto", path, expected_tokens=concurrent * NEW_TOKENS, dtype=dtype)
    print(f"{name} x{concurrent}: auto for {concurrent * NEW_TOKENS} expected tokens: {row['auto']}")
    benchmark.extra_info.update(row)


def start_up_cpu_s(path: Path, backend: str, loop: asyncio.AbstractEventLoop) -> float:
    """CPU-seconds from creating a ``local/`` model to the end of its first one-token answer: the weights' load,
    and for vLLM its server's start (read while the server still runs, then it is stopped)."""
    server = backend == "vllm"
    cpu = cpu_seconds(descendants=server)
    model = get_model(f"local/{path}", backend=backend, dtype=DTYPE, max_model_len=1024, memoize=False)
    one = GenerateConfig(max_tokens=1, temperature=0)
    loop.run_until_complete(model.generate([ChatMessageUser(content=_question(0))], config=one))
    spent = cpu_seconds(descendants=server) - cpu
    if server:
        model.api.close()
    return spent


def test_start_up_cpu_seconds(benchmark, tmp_path_factory, loop):
    """vLLM's start-up beyond our engine's load, on the 76M checkpoint (``START_ROUNDS`` interleaved pairs):
    ``mara_bench.harness.providers.backends.CPU_COSTS.vllm_start_cpu_s``."""
    path = build_tiny_model(tmp_path_factory.mktemp("start-76M"), hidden_size=SIZES["76M"])
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: start_up_cpu_s(path, "hf", loop),
            lambda: start_up_cpu_s(path, "vllm", loop),
            START_ROUNDS,
        ),
        rounds=1,
        iterations=1,
    )
    extra = ratio_spread(pairs, lambda p: p.baseline - p.ours)
    benchmark.extra_info.update(
        ours_cpu_s=[p.ours for p in pairs],
        vllm_cpu_s=[p.baseline for p in pairs],
        vllm_extra_cpu_s=extra.as_dict(),
    )
    print(
        f"\nstart-up to a first token, 76M {DTYPE}: ours {[round(p.ours, 1) for p in pairs]} CPU-s, "
        f"vLLM {[round(p.baseline, 1) for p in pairs]}; vLLM's extra min/median/max {extra}"
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
