"""Real-trainer throughput of MarsRL's pipelined / segmented rollouts against the synchronous step, on the tiny recipe.

Not a timed suite (it defines no test, so ``pytest benchmarks`` skips it): run it as a script,

    PYTHONPATH=. .venv/bin/python benchmarks/bench_pipelined_train.py --pairs 3 --steps 4

It runs ``trainer/recipes/marsrl-tiny.yaml``'s cold start once, then ``--pairs`` interleaved pairs
(``benchmarks._pairs``): a synchronous run and a pipelined run (``algorithm.marsrl.pipeline: true``,
``max_staleness`` 1, ``--segment`` tokens per segment if given) of ``--steps`` RL steps each, both from the warm
model, as ``Trainer.train_step`` -- what ``mara train`` runs -- goes. Each run's throughput is the samples it trained
per second of its steps (model loading excluded; the pipelined run's start-up and the in-flight work it drops at the
end included). Printed: samples/s of each side and the per-pair ratio pipelined / synchronous, min / median / max,
and the pipelined runs' staleness and waiting times. The simulated long-tail benchmark is
``benchmarks/bench_schedules.py``; this one measures the real code on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from benchmarks._pairs import Spread, interleaved_pairs
from mara_bench.trainer.config import load_config
from mara_bench.trainer.run.engine import Trainer

RECIPE = Path(__file__).resolve().parents[1] / "trainer" / "recipes" / "marsrl-tiny.yaml"


@dataclass(frozen=True)
class Run:
    samples: int
    seconds: float
    staleness_max: float = 0.0
    learner_wait: float = 0.0
    sampler_wait: float = 0.0

    @property
    def rate(self) -> float:
        return self.samples / self.seconds


def warm_model(out: Path) -> str:
    trainer = Trainer(load_config(RECIPE), out / "warmup")
    trainer.warm_up()
    trainer.policy.save_pretrained(out / "warm")
    trainer.tokenizer.save_pretrained(out / "warm")
    return str(out / "warm")


def timed_run(model: str, out: Path, steps: int, *, pipeline: bool, segment: int | None) -> Run:
    config = load_config(RECIPE)
    config.model.path, config.warmup.steps, config.steps = model, 0, steps
    config.algorithm.marsrl.pipeline = pipeline
    config.rollout.segment_tokens = segment if pipeline else None  # the baseline is the synchronous step
    trainer = Trainer(config, out)
    started = time.perf_counter()
    records = [trainer.train_step() for _ in range(steps)]
    seconds = time.perf_counter() - started
    samples = sum(r.get(f"role/{role}/samples", 0.0) for r in records for role in trainer.roles)
    return Run(
        int(samples),
        seconds,
        max((r.get("staleness_max", 0.0) for r in records), default=0.0),
        sum(r.get("time_wait_learner", 0.0) for r in records),
        sum(r.get("time_wait_sampler", 0.0) for r in records),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument(
        "--segment", type=int, default=None, help="rollout.segment_tokens of the pipelined runs"
    )
    parser.add_argument(
        "--threads", type=int, default=torch.get_num_threads(), help="torch threads of the learner"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        model = warm_model(out)
        counter = iter(range(10_000))

        def run(pipeline: bool) -> Run:
            return timed_run(
                model, out / f"run{next(counter)}", args.steps, pipeline=pipeline, segment=args.segment
            )

        pairs = interleaved_pairs(lambda: run(True), lambda: run(False), args.pairs)
    for pair in pairs:
        print(f"pair: pipelined {pair.ours}  synchronous {pair.baseline}", flush=True)
    report = {
        "pipelined_samples_per_s": Spread.of([p.ours.rate for p in pairs]).as_dict(),
        "synchronous_samples_per_s": Spread.of([p.baseline.rate for p in pairs]).as_dict(),
        "ratio_pipelined_over_synchronous": Spread.of(
            [p.ours.rate / p.baseline.rate for p in pairs]
        ).as_dict(),
        "pipelined_staleness_max": max(p.ours.staleness_max for p in pairs),
        "pipelined_learner_wait_s": Spread.of([p.ours.learner_wait for p in pairs]).as_dict(),
        "pipelined_sampler_wait_s": Spread.of([p.ours.sampler_wait for p in pairs]).as_dict(),
        "pairs": args.pairs,
        "steps": args.steps,
        "segment_tokens": args.segment,
        "threads": args.threads,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
