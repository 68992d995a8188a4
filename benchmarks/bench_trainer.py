"""Trainer throughput against TRL's ``GRPOTrainer``, same tiny model, data, group size and lengths, same process.

Both train GRPO on the toy addition task (``trainer.toy``, every sum 7, the same reward): 8 questions x 8 samples per step, at most 8 new tokens,
lr 1e-2, no KL, on CPU. Reported in ``extra_info`` and printed, never asserted: seconds per step, tokens/s
(prompt + completion tokens per second), their ratio (target >= 1.0), and the share of padding among the token
positions each trainer's forward passes compute (target <= 10%). The first step of each is a warm-up. Run:
``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_trainer.py --benchmark-only -s``.

``test_rollout_continuous_vs_static`` times the rollout phase alone: a step's V-C group (Solver -> Verifier ->
Corrector ..., ``harness.systems.vc``) through ``PolicyChat`` under each scheduler, in alternating rounds under
the same torch seeds. The tiny model's end-of-turn logit is raised (``eos_prone``) so that replies end at varied
lengths, as a trained policy's do; with every row running to ``max_tokens`` both schedulers would step in
lockstep. Reported: rollout seconds per step of each and their ratio static / continuous (> 1: continuous is
faster), and the decode steps each took.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
import torch

from harness.providers.generation import Sampling, generate, render_prompt
from harness.systems import build_toolbox, get_system, run_system
from harness.tinymodel import build_tiny_model
from trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
from trainer.engine import Trainer
from trainer.policy import PolicyChat
from trainer.toy import addition_task, reply_reward

os.environ.setdefault("HF_HUB_OFFLINE", "1")
PROMPTS, GROUP, NEW_TOKENS, STEPS, LR = 8, 8, 8, 6, 1e-2
TASK_ARGS = {"n_prompts": 64, "total": 7}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("bench-tiny"))


def ours(model_dir, run_dir) -> dict[str, float]:
    """Seconds per step, tokens/s and padding share of our engine (steps after the first)."""
    config = TrainConfig(
        model=ModelConfig(path=str(model_dir)),
        task=TaskConfig(args=TASK_ARGS),
        rollout=RolloutConfig(prompts_per_step=PROMPTS, group_size=GROUP, max_tokens=NEW_TOKENS),
        optim=OptimConfig(lr=LR),
        steps=STEPS,
    )
    trainer = Trainer(config, run_dir)
    trainer.train_step()
    steps = [trainer.train_step() for _ in range(STEPS - 1)]
    seconds = sum(m["time_step"] for m in steps)
    return {
        "step_s": seconds / len(steps),
        "tokens_per_s": sum(m["tokens"] for m in steps) / seconds,
        "padding_share": sum(m["padding_share"] for m in steps) / len(steps),
    }


def trl(model_dir, out_dir) -> dict[str, float]:
    """The same measurements for TRL's GRPOTrainer (transformers generation, no vLLM)."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    task = addition_task(**TASK_ARGS)
    data = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": i["question"]}], "answer": i["answer"]} for i in task.items]
    )

    def toy_reward(completions, answer, **kwargs):
        return [reply_reward(c[0]["content"], a) for c, a in zip(completions, answer, strict=True)]

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.starts, self.ends = [], []

        def on_step_begin(self, args, state, control, **kwargs):
            self.starts.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())

    config = GRPOConfig(
        output_dir=str(out_dir),
        per_device_train_batch_size=PROMPTS * GROUP,
        num_generations=GROUP,
        max_completion_length=NEW_TOKENS,
        max_steps=STEPS,
        learning_rate=LR,
        beta=0.0,
        temperature=1.0,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    timer = StepTimes()
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
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
    durations = [end - start for start, end in zip(timer.starts, timer.ends, strict=True)][1:]
    tokens = [r["num_tokens"] for r in trainer.state.log_history if "num_tokens" in r]
    step_tokens = tokens[-1] - tokens[0]
    return {
        "step_s": sum(durations) / len(durations),
        "tokens_per_s": step_tokens / sum(durations),
        "padding_share": sum(shares) / len(shares),
    }


def test_trainer_vs_trl_grpo(benchmark, tiny, tmp_path):
    baseline = trl(tiny, tmp_path / "trl")
    measured = benchmark.pedantic(ours, args=(tiny, tmp_path / "ours"), rounds=1, iterations=1)
    ratio = measured["tokens_per_s"] / baseline["tokens_per_s"]
    benchmark.extra_info.update(
        ours=measured,
        trl=baseline,
        tokens_per_s_ratio=ratio,
        step_time_ratio=baseline["step_s"] / measured["step_s"],
    )
    print(
        f"\nours: {measured['step_s']:.3f} s/step, {measured['tokens_per_s']:.0f} tok/s, "
        f"padding {measured['padding_share']:.1%}\n"
        f"trl:  {baseline['step_s']:.3f} s/step, {baseline['tokens_per_s']:.0f} tok/s, "
        f"padding {baseline['padding_share']:.1%}\n"
        f"tokens/s ratio ours/trl: {ratio:.2f} (target >= 1.0)"
    )


VC_QUESTIONS, VC_GROUP, VC_TOKENS, VC_ROUNDS = 4, 4, 24, 3
VC_OPTIONS = {"accept_after": 2, "max_iterations": 2, "solver_attempts": 3}
EOS_RATE = 1 / 12
"""Mean per-token end-of-turn probability of the ``eos_prone`` model: replies of 1 to ``VC_TOKENS`` tokens."""


@pytest.fixture(scope="module")
def eos_prone(tiny):
    """The tiny model with its end-of-turn output row pointed along the mean final hidden state, scaled (by
    bisection) so that the end-of-turn token's mean probability over sampled replies is ``EOS_RATE``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny).eval(), AutoTokenizer.from_pretrained(tiny)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    prompts = [render_prompt(tokenizer, [{"role": "user", "content": f"What is {i} + 3?"}]) for i in range(8)]
    torch.manual_seed(0)
    replies = generate(model, tokenizer, prompts, Sampling(max_tokens=VC_TOKENS))
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


def vc_rollout_seconds(model, tokenizer, scheduler: str, seed: int) -> tuple[float, int, int]:
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
    return seconds, sum(len(e.calls) for e in episodes), steps


def test_rollout_continuous_vs_static(benchmark, eos_prone):
    model, tokenizer = eos_prone
    vc_rollout_seconds(model, tokenizer, "continuous", seed=99)  # warm-up
    totals = {"static": [0.0, 0, 0], "continuous": [0.0, 0, 0]}

    def rounds():
        for seed in range(VC_ROUNDS):
            for scheduler in ("static", "continuous"):
                for index, value in enumerate(vc_rollout_seconds(model, tokenizer, scheduler, seed)):
                    totals[scheduler][index] += value

    benchmark.pedantic(rounds, rounds=1, iterations=1)
    static_s, continuous_s = (totals[s][0] / VC_ROUNDS for s in ("static", "continuous"))
    ratio = static_s / continuous_s
    benchmark.extra_info.update(
        static_rollout_s=static_s,
        continuous_rollout_s=continuous_s,
        static_over_continuous=ratio,
        calls_per_step={s: totals[s][1] / VC_ROUNDS for s in totals},
        continuous_decode_steps=totals["continuous"][2] / VC_ROUNDS,
    )
    print(
        f"\nV-C group rollout ({VC_QUESTIONS}x{VC_GROUP} episodes, <= {VC_TOKENS} tokens a call): "
        f"static {static_s:.3f} s/step ({totals['static'][1] / VC_ROUNDS:.0f} calls), "
        f"continuous {continuous_s:.3f} s/step ({totals['continuous'][1] / VC_ROUNDS:.0f} calls, "
        f"{totals['continuous'][2] / VC_ROUNDS:.0f} decode steps); static / continuous: {ratio:.2f}"
    )
