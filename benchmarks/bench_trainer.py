"""Trainer throughput against TRL's ``GRPOTrainer``, same tiny model, data, group size and lengths, same process.

Both train GRPO on the toy addition task (``trainer.toy``, every sum 7, the same reward): 8 questions x 8 samples per step, at most 8 new tokens,
lr 1e-2, no KL, on CPU. Reported in ``extra_info`` and printed, never asserted: seconds per step, tokens/s
(prompt + completion tokens per second), their ratio (target >= 1.0), and the share of padding among the token
positions each trainer's forward passes compute (target <= 10%). The first step of each is a warm-up. Run:
``OMP_NUM_THREADS=1 .venv/bin/pytest benchmarks/bench_trainer.py --benchmark-only -s``.
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from harness.tinymodel import build_tiny_model
from trainer.config import ModelConfig, OptimConfig, RolloutConfig, TaskConfig, TrainConfig
from trainer.engine import Trainer
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
