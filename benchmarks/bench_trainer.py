"""Trainer throughput against TRL's ``GRPOTrainer`` doing the SAME work, and the cost of scoring response tokens.

``test_trainer_vs_trl_grpo``: both train GRPO on the toy addition task (``mara_bench.trainer.tasks.toy``, operands up to 5000, so
prompts differ in length), rewarded by the share of the sum's digits a reply contains (``digit_overlap_reward``:
an untrained model never states the sum, so the exact reward would leave every group at 0 and every update empty;
both sides must report non-zero reward spread and gradient norm), with the same tiny model, made ``eos_prone`` so that replies end at varied lengths
(1 to ``NEW_TOKENS`` tokens) and padding CAN happen: 8 questions x 8 samples per step, lr 1e-2, no KL, no
entropy bonus, token-mean loss, gradient clipping at 1.0, one optimizer step per generation batch, fp32, on
CPU. TRL is configured to do that work: ``bf16=False`` and ``gradient_checkpointing=False`` (its defaults are
True), ``beta=0``, ``loss_type="dapo"`` (token-mean), ``num_iterations=1``, the same group size, lengths, batch
and number of optimizer steps. Each run is a fresh forked process (same start state; its peak RSS growth is
its memory); one unmeasured run of each side first warms the page cache and imports (the first child of a
session once ran its steps at 2/3 of the later runs' speed), then ``ROUNDS`` interleaved pairs (TRL, ours) give
per-pair ratios of tokens/s (prompt + completion tokens, the first step a warm-up and left out on both sides),
reported min/median/max (target >= 1.5), with each
side's padding share of the computed token positions of its training forward (ours: target <= 10% -- TRL pads to
the longest row). Both sides run one torch thread; tokens/s is reported per wall-clock second and per CPU second
of the child process: on a shared machine another job preempts either side's thread for a varying share of a
pair's wall time (a child got 50-70% of a core under a load of 4 on 2 cores), which the CPU-time ratio does not
see, so that is the one to trust there. It runs twice: with the default ``rollout.parity`` (``auto``: no parity
forward on this, the ``hf``, backend) and with ``parity: warn`` on every row (the default before issue 37); each
prints our step's breakdown (``time_sync``, ``time_rollout``, ``time_scoring``, ``time_parity``,
``time_update`` as shares of ``time_step``). ``test_trainer_vs_trl_grpo_smollm2`` does the same comparison on
SmolLM2-135M (converted by ``mara models get smollm2-135m``) with less work (``REAL_WORK``), with
``MARA_BENCH_FULL=1`` only: it takes about 30 minutes on a shared CPU.

``test_response_scoring_memory``: the forward + backward of one micro-batch's response-token logprobs and
entropies at a real vocabulary size (32k), the chunked scorer (``mara_bench.trainer.learner.logprobs``) against the
full-vocabulary logits path it replaced (``response_logits`` + ``log_softmax`` + ``entropy``), time and peak
RSS growth of each in interleaved forked pairs.

``test_rollout_continuous_vs_static`` times the rollout phase alone: a step's V-C group (Solver -> Verifier ->
Corrector ..., ``mara_bench.harness.systems.vc``) through ``PolicyChat`` under each scheduler, in interleaved pairs under the
same torch seeds; with every row running to ``max_tokens`` both schedulers would step in lockstep, hence the
``eos_prone`` model. Reported: per-pair ratio static / continuous of rollout seconds (> 1: continuous is faster).
A group is 2 questions x 4 episodes (``MARA_BENCH_FULL=1``: 4 x 4).

Run: ``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_trainer.py --benchmark-only -s``. All ratios come from
interleaved pairs (``benchmarks/_pairs.py``): the machine is shared, so only a pair's two runs see one load.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import itertools
import multiprocessing
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from _pairs import interleaved_pairs, ratio_spread

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.generation import generate
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.systems import build_toolbox, get_system, run_system
from mara_bench.harness.tinymodel import build_tiny_model
from mara_bench.trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
from mara_bench.trainer.learner.policy import PolicyChat
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.tasks.toy import addition_task

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PROMPTS, GROUP, NEW_TOKENS, STEPS, ROUNDS = 8, 8, 24, 4, 5


@dataclass(frozen=True)
class Work:
    """The GRPO work both trainers do: questions x samples a step, new tokens at most, steps (the first one a
    warm-up), interleaved pairs, the learning rate; ``warm_up_runs``: one unmeasured run of each side first (else
    the imports alone are warmed, in the parent)."""

    prompts: int
    group: int
    new_tokens: int
    steps: int
    rounds: int
    lr: float = 1e-2
    warm_up_runs: bool = True


TOY_WORK = Work(PROMPTS, GROUP, NEW_TOKENS, STEPS, ROUNDS)
REAL_WORK = Work(prompts=2, group=4, new_tokens=24, steps=3, rounds=3, lr=1e-5, warm_up_runs=False)
"""The same comparison on SmolLM2-135M, sized for a few minutes a run on the shared CPU, at a pretrained model's
learning rate (the toy work's 1e-2 leaves SmolLM2 writing noise after one step: every later reward ties)."""
SMOLLM2 = Path.home() / ".cache" / "mara-bench" / "models" / "smollm2-135m"
TASK_ARGS = {"n_prompts": 64, "max_operand": 5000}
EOS_RATE = 1 / 12
"""Mean per-token end-of-turn probability of the ``eos_prone`` model: replies of 1 to ``NEW_TOKENS`` tokens."""


def in_fork(work: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
    """``work(*args)`` in a forked child, its result with ``peak_rss_mib``: the child's peak resident memory
    above what it started with. The parent's objects are frozen out of the child's garbage collections."""
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)

    def child() -> None:
        start_kib = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024
        result = work(*args)
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        writer.send({**result, "peak_rss_mib": (peak_kib - start_kib) / 1024})

    process = context.Process(target=child)
    gc.freeze()  # the child never scans (nor copies the pages of) the objects it inherits from this process
    process.start()
    gc.unfreeze()
    writer.close()  # the child's copy is the only writer left: its death ends the wait below
    try:
        result = reader.recv()
    except EOFError:
        process.join()
        raise RuntimeError(
            f"the measured child died without a result (exit code {process.exitcode})"
        ) from None
    process.join()
    return result


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("bench-tiny"))


@pytest.fixture(scope="module")
def eos_prone(tiny):
    return eos_prone_model(tiny)


def eos_prone_model(tiny: Path) -> tuple[Any, Any]:
    """The tiny model at ``tiny`` with its end-of-turn output row pointed along the mean final hidden state,
    scaled (by bisection) so that the end-of-turn token's mean probability over sampled replies is ``EOS_RATE``;
    with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny).eval(), AutoTokenizer.from_pretrained(tiny)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    prompts = [render_prompt(tokenizer, [{"role": "user", "content": f"What is {i} + 3?"}]) for i in range(8)]
    torch.manual_seed(0)
    replies = generate(model, tokenizer, prompts, Sampling(max_tokens=NEW_TOKENS))
    with torch.no_grad():
        hidden = torch.cat(
            [
                model(torch.tensor([r.prompt_ids + r.response_ids]), output_hidden_states=True).hidden_states[
                    -1
                ][0]
                for r in replies
            ]
        )
        direction = hidden.mean(0) / hidden.mean(0).norm() ** 2
        low, high = 0.0, 32.0
        for _ in range(30):
            scale = (low + high) / 2
            model.lm_head.weight[eos] = scale * direction
            rate = torch.softmax(model.lm_head(hidden), -1)[:, eos].mean()
            low, high = (scale, high) if rate < EOS_RATE else (low, scale)
    return model, tokenizer


@pytest.fixture(scope="module")
def eos_prone_dir(eos_prone, tmp_path_factory):
    """The ``eos_prone`` model saved, for the trainers to load."""
    model, tokenizer = eos_prone
    directory = tmp_path_factory.mktemp("bench-eos-prone")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def digit_overlap_reward(reply: str, answer: str) -> float:
    """The share of the answer's distinct digits that the reply contains: a reward an untrained model's replies
    earn in varied amounts, so both sides' groups have non-zero advantages and every step is a real update (the
    exact-sum reward is 0 for every reply of this model, and a zero loss times nothing)."""
    digits = set(answer)
    return sum(digit in reply for digit in digits) / len(digits)


PARITY = {"auto": {}, "every-row": {"parity": "warn", "parity_share": 1.0}}
"""The rollout settings the TRL comparison runs under: the default, and a parity forward over every row."""
PHASES = ("time_sync", "time_rollout", "time_scoring", "time_parity", "time_update")


def ours(model_dir, run_dir, work: Work, parity: str = "auto") -> dict[str, float]:
    """Seconds per step, tokens/s and padding share of our engine (steps after the first), its torch threads,
    the mean reward spread and gradient norm of its steps (the same-work check: both must be non-zero) and the
    share of the step each phase took (``PHASES``), under the ``PARITY`` settings named ``parity``."""
    import mara_bench.trainer.tasks.toy as toy

    toy.reply_reward = (
        digit_overlap_reward  # this forked child only: the toy task's reward, as TRL's side gets
    )
    torch.set_num_threads(1)
    config = TrainConfig(
        model=ModelConfig(path=str(model_dir), dtype="float32"),
        task=TaskConfig(args=TASK_ARGS),
        rollout=RolloutConfig(
            prompts_per_step=work.prompts, group_size=work.group, max_tokens=work.new_tokens, **PARITY[parity]
        ),
        optim=OptimConfig(lr=work.lr, grad_clip=1.0),
        steps=work.steps,
    )
    trainer = Trainer(config, run_dir)
    trainer.train_step()
    wall, cpu = time.perf_counter(), time.process_time()
    steps = [trainer.train_step() for _ in range(work.steps - 1)]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    tokens = sum(m["tokens"] for m in steps)
    return {
        "step_s": wall / len(steps),
        "tokens_per_s": tokens / wall,
        "tokens_per_cpu_s": tokens / cpu,
        "padding_share": sum(m["padding_share"] for m in steps) / len(steps),
        "threads": torch.get_num_threads(),
        "reward_std": sum(m["reward_std"] for m in steps) / len(steps),
        "grad_norm": sum(m["grad_norm"] for m in steps) / len(steps),
        **{phase: sum(m[phase] for m in steps) / sum(m["time_step"] for m in steps) for phase in PHASES},
    }


def trl(model_dir, out_dir, work: Work) -> dict[str, float]:
    """The same measurements for TRL's GRPOTrainer doing the same work (transformers generation, no vLLM)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    task = addition_task(**TASK_ARGS)
    data = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": i["question"]}], "answer": i["answer"]} for i in task.items]
    )

    def toy_reward(completions, answer, **kwargs):
        return [digit_overlap_reward(c[0]["content"], a) for c, a in zip(completions, answer, strict=True)]

    class StepTimes(TrainerCallback):
        """Wall and CPU time at each step's start and end (generation and scoring happen inside the step)."""

        def __init__(self):
            self.starts, self.ends = [], []

        def on_step_begin(self, args, state, control, **kwargs):
            self.starts.append((time.perf_counter(), time.process_time()))

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append((time.perf_counter(), time.process_time()))

    config = GRPOConfig(
        output_dir=str(out_dir),
        per_device_train_batch_size=work.prompts * work.group,
        num_generations=work.group,
        max_completion_length=work.new_tokens,
        max_steps=work.steps,
        learning_rate=work.lr,
        beta=0.0,
        loss_type="dapo",
        num_iterations=1,
        max_grad_norm=1.0,
        temperature=1.0,
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    timer = StepTimes()
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        processing_class=AutoTokenizer.from_pretrained(model_dir, padding_side="left"),
        reward_funcs=toy_reward,
        args=config,
        train_dataset=data,
        callbacks=[timer],
    )
    shares = []
    generate_and_score = trainer._generate_and_score_completions

    def recording(inputs):
        out = generate_and_score(inputs)
        masks = (out["prompt_mask"], out["completion_mask"])
        shares.append(1 - sum(float(m.sum()) for m in masks) / sum(m.numel() for m in masks))
        return out

    trainer._generate_and_score_completions = recording
    trainer.train()
    spans = list(zip(timer.starts, timer.ends, strict=True))[1:]
    wall = sum(end[0] - start[0] for start, end in spans)
    cpu = sum(end[1] - start[1] for start, end in spans)
    logged = [r for r in trainer.state.log_history if "num_tokens" in r]
    step_tokens = logged[-1]["num_tokens"] - logged[0]["num_tokens"]
    return {
        "step_s": wall / len(spans),
        "tokens_per_s": step_tokens / wall,
        "tokens_per_cpu_s": step_tokens / cpu,
        "padding_share": sum(shares) / len(shares),
        "threads": torch.get_num_threads(),
        "reward_std": sum(r.get("reward_std", 0.0) for r in logged[1:]) / len(logged[1:]),
        "grad_norm": sum(r.get("grad_norm", 0.0) for r in logged[1:]) / len(logged[1:]),
    }


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


@pytest.mark.parametrize("parity", list(PARITY))
def test_trainer_vs_trl_grpo(benchmark, eos_prone_dir, tmp_path, parity):
    compare_with_trl(benchmark, eos_prone_dir, tmp_path, TOY_WORK, parity)


@pytest.mark.realmodel
@pytest.mark.skipif(
    not (SMOLLM2 / "config.json").is_file() or os.environ.get("MARA_BENCH_FULL") != "1",
    reason=f"needs MARA_BENCH_FULL=1 (about 30 minutes) and SmolLM2-135M converted at {SMOLLM2}",
)
def test_trainer_vs_trl_grpo_smollm2(benchmark, tmp_path):
    """The comparison on a real model (``mara models get smollm2-135m``), the default parity, ``REAL_WORK``."""
    compare_with_trl(benchmark, SMOLLM2, tmp_path, REAL_WORK, "auto")


def compare_with_trl(benchmark, model_dir, tmp_path, work: Work, parity: str) -> None:
    """``work.rounds`` interleaved pairs of our trainer and TRL's on ``model_dir`` after a warm-up run of each,
    printed and kept in ``extra_info``."""
    runs = itertools.count()
    if work.warm_up_runs:  # not measured: page cache, imports
        in_fork(trl, model_dir, tmp_path / "trl-warm-up", work)
        in_fork(ours, model_dir, tmp_path / "ours-warm-up", work, parity)
    else:
        importlib.import_module("trl")  # the children inherit the import
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: in_fork(ours, model_dir, tmp_path / f"ours{next(runs)}", work, parity),
            lambda: in_fork(trl, model_dir, tmp_path / f"trl{next(runs)}", work),
            work.rounds,
        ),
        rounds=1,
        iterations=1,
    )
    tokens = ratio_spread(pairs, lambda p: p.ours["tokens_per_s"] / p.baseline["tokens_per_s"])
    tokens_cpu = ratio_spread(pairs, lambda p: p.ours["tokens_per_cpu_s"] / p.baseline["tokens_per_cpu_s"])
    memory = ratio_spread(pairs, lambda p: p.ours["peak_rss_mib"] / p.baseline["peak_rss_mib"])
    sides = {
        side: {key: _median([getattr(p, side)[key] for p in pairs]) for key in getattr(pairs[0], side)}
        for side in ("ours", "baseline")
    }
    benchmark.extra_info.update(
        tokens_per_s_ratio=tokens.as_dict(),
        tokens_per_cpu_s_ratio=tokens_cpu.as_dict(),
        pairs=[{"ours": p.ours, "trl": p.baseline} for p in pairs],
        peak_rss_ratio=memory.as_dict(),
        ours=sides["ours"],
        trl=sides["baseline"],
    )
    for index, pair in enumerate(pairs):
        print(
            f"\npair {index}: ours {pair.ours['tokens_per_s']:.0f} tok/s ({pair.ours['tokens_per_cpu_s']:.0f} per CPU s), "
            f"TRL {pair.baseline['tokens_per_s']:.0f} tok/s ({pair.baseline['tokens_per_cpu_s']:.0f} per CPU s)",
            end="",
        )
    print(
        f"\n{work.rounds} interleaved pairs, medians -- ours: {sides['ours']['tokens_per_s']:.0f} tok/s, "
        f"{sides['ours']['step_s']:.3f} s/step, padding {sides['ours']['padding_share']:.1%}, "
        f"peak RSS +{sides['ours']['peak_rss_mib']:.0f} MiB; TRL (same work): "
        f"{sides['baseline']['tokens_per_s']:.0f} tok/s, {sides['baseline']['step_s']:.3f} s/step, "
        f"padding {sides['baseline']['padding_share']:.1%}, peak RSS +{sides['baseline']['peak_rss_mib']:.0f} MiB\n"
        f"tokens/s ours/TRL min/median/max: wall {tokens}, CPU {tokens_cpu} (target >= 1.5); "
        f"peak RSS ours/TRL: {memory}; "
        f"our padding share target <= 10%\n"
        f"our step (parity {parity}): "
        + ", ".join(f"{phase.removeprefix('time_')} {sides['ours'][phase]:.1%}" for phase in PHASES)
    )
    assert {p.ours["threads"] for p in pairs} == {p.baseline["threads"] for p in pairs} == {1}
    for side in ("ours", "baseline"):  # the same work, and real learning: varied rewards, non-zero updates
        assert all(getattr(p, side)["reward_std"] > 0 and getattr(p, side)["grad_norm"] > 0 for p in pairs), (
            side
        )


SCORING_VOCAB, SCORING_ROWS, SCORING_PROMPT, SCORING_RESPONSE, SCORING_ROUNDS = 32768, 4, 128, 64, 3


def _scoring_pass(path: str) -> dict[str, float]:
    """Forward + backward of one micro-batch's response logprobs and entropies at a 32k vocabulary."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from mara_bench.core.samples import Sample
    from mara_bench.trainer.algorithms.losses import entropy
    from mara_bench.trainer.learner.logprobs import response_scores
    from mara_bench.trainer.learner.packing import micro_batches, response_logits, token_logprobs

    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=SCORING_VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    model = Qwen2ForCausalLM(config)
    ids = torch.randint(0, SCORING_VOCAB, (SCORING_ROWS, SCORING_PROMPT + SCORING_RESPONSE)).tolist()
    samples = [
        Sample(
            prompt_ids=row[:SCORING_PROMPT],
            response_ids=row[SCORING_PROMPT:],
            loss_mask=[1] * SCORING_RESPONSE,
        )
        for row in ids
    ]
    [batch] = micro_batches(samples, token_budget=10**6)
    started = time.perf_counter()
    if path == "chunked":
        scores = response_scores(model, batch, with_entropy=True)
        logprobs, entropies = scores.logprobs, scores.entropy
    else:
        logits = response_logits(model, batch)
        logprobs, entropies = token_logprobs(logits, batch.targets), entropy(logits)
    (logprobs.sum() - 0.01 * entropies.sum()).backward()
    return {"seconds": time.perf_counter() - started}


def test_response_scoring_memory(benchmark):
    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(
            lambda: in_fork(_scoring_pass, "chunked"),
            lambda: in_fork(_scoring_pass, "full"),
            SCORING_ROUNDS,
        ),
        rounds=1,
        iterations=1,
    )
    speed = ratio_spread(pairs, lambda p: p.baseline["seconds"] / p.ours["seconds"])
    memory = ratio_spread(pairs, lambda p: p.baseline["peak_rss_mib"] / p.ours["peak_rss_mib"])
    chunked = _median([p.ours["peak_rss_mib"] for p in pairs])
    full = _median([p.baseline["peak_rss_mib"] for p in pairs])
    benchmark.extra_info.update(
        speedup=speed.as_dict(), memory_saving=memory.as_dict(), chunked_peak_mib=chunked, full_peak_mib=full
    )
    print(
        f"\nscoring {SCORING_ROWS}x({SCORING_PROMPT}+{SCORING_RESPONSE}) tokens at vocab {SCORING_VOCAB}, "
        f"forward+backward, {SCORING_ROUNDS} pairs: peak RSS growth chunked {chunked:.0f} MiB vs full logits "
        f"{full:.0f} MiB (full/chunked {memory}); time full/chunked {speed}"
    )


VC_QUESTIONS = 4 if os.environ.get("MARA_BENCH_FULL") == "1" else 2
VC_GROUP, VC_TOKENS, VC_ROUNDS = 4, NEW_TOKENS, 3
VC_OPTIONS = {"accept_after": 2, "max_iterations": 2, "solver_attempts": 3}


def vc_rollout(model, tokenizer, scheduler: str, seed: int) -> dict[str, float]:
    """Seconds to roll out one step's V-C group, its model calls, and its decode steps (continuous only)."""
    chat = PolicyChat(model, tokenizer, defaults=Sampling(max_tokens=VC_TOKENS), scheduler=scheduler)
    system = get_system("vc")
    toolbox = build_toolbox(system, {})
    questions = [f"What is {i} + {7 - i}?" for i in range(VC_QUESTIONS)]

    async def group():
        runs = [run_system("vc", q, chat, toolbox, **VC_OPTIONS) for q in questions for _ in range(VC_GROUP)]
        return await asyncio.gather(*runs)

    torch.manual_seed(seed)
    started = time.perf_counter()
    episodes = asyncio.run(group())
    seconds = time.perf_counter() - started
    steps = len(chat.batch.step_sizes) if chat.batch is not None else 0
    return {"seconds": seconds, "calls": sum(len(e.calls) for e in episodes), "decode_steps": steps}


def test_rollout_continuous_vs_static(benchmark, eos_prone):
    model, tokenizer = eos_prone
    vc_rollout(model, tokenizer, "continuous", seed=99)  # warm-up
    seeds = {"static": itertools.count(), "continuous": itertools.count()}

    def measure(scheduler: str) -> dict[str, float]:
        """Round k of each side draws under seed k, so a pair's two rollouts start from the same RNG state."""
        return vc_rollout(model, tokenizer, scheduler, next(seeds[scheduler]))

    pairs = benchmark.pedantic(
        interleaved_pairs,
        args=(lambda: measure("continuous"), lambda: measure("static"), VC_ROUNDS),
        rounds=1,
        iterations=1,
    )
    ratio = ratio_spread(pairs, lambda p: p.baseline["seconds"] / p.ours["seconds"])
    static_s = _median([p.baseline["seconds"] for p in pairs])
    continuous_s = _median([p.ours["seconds"] for p in pairs])
    benchmark.extra_info.update(
        static_rollout_s=static_s,
        continuous_rollout_s=continuous_s,
        static_over_continuous=ratio.as_dict(),
        calls_per_step={"static": pairs[0].baseline["calls"], "continuous": pairs[0].ours["calls"]},
        continuous_decode_steps=_median([p.ours["decode_steps"] for p in pairs]),
    )
    print(
        f"\nV-C group rollout ({VC_QUESTIONS}x{VC_GROUP} episodes, <= {VC_TOKENS} tokens a call), {VC_ROUNDS} pairs: "
        f"medians static {static_s:.3f} s/step, continuous {continuous_s:.3f} s/step; "
        f"static / continuous min/median/max: {ratio}"
    )
