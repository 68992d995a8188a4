"""The engine table's measured rows (``engine_table.json``) and ``auto``'s cost rule against them.

``python -m benchmarks._engine_costs`` (from the repository root) prints the fit that ``CPU_COSTS`` rounds (each
engine's FLOPs per CPU-second and fixed cost a token, from the two float32 shapes of ``mara tiny-model``;
bfloat16's rates from the 76M rows), the rule's per-token costs against the measured ones, and where vLLM pays
for its start-up, measured and by the rule: the figures of ``docs/experiments/engines.md``, "`auto` on these
rows". ``tests/providers/test_backend_choice.py`` holds the rule to the same rows.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mara_bench.harness.providers.backends import CPU_COSTS, flops_per_token, job_flops

TABLE = Path(__file__).with_name("engine_table.json")


@dataclass(frozen=True)
class Measured:
    """One model and dtype of the engine table at 8 and 32 concurrent requests: output tokens per CPU-second of
    each engine and the prompt tokens per output token of that workload; ``model_dir`` holds its config."""

    name: str
    model_dir: Path
    dtype: str
    ours: tuple[float, float]
    vllm: tuple[float, float]
    prompt_tokens_per_token: tuple[float, float]

    @property
    def flops(self) -> int:
        flops = flops_per_token(self.model_dir)
        assert flops is not None, self.model_dir
        return flops

    def breakevens(self) -> list[float | None]:
        """The tokens from which vLLM's start-up pays at each concurrency, by the measured rates."""
        return [
            CPU_COSTS.vllm_start_cpu_s / (1 / ours - 1 / vllm) if ours < vllm else None
            for ours, vllm in zip(self.ours, self.vllm, strict=True)
        ]

    def rule_breakevens(self) -> list[int | None]:
        """The rule's break-even at each concurrency's prompt share."""
        return [
            CPU_COSTS.breakeven_tokens(self.flops * (1 + share), self.dtype)
            for share in self.prompt_tokens_per_token
        ]


def measured_rows(configs: Path) -> list[Measured]:
    """The table's rows, each shape's ``config.json`` written under ``configs``."""
    data = json.loads(TABLE.read_text())
    for shape, config in data["shapes"].items():
        (configs / shape).mkdir(exist_ok=True)
        (configs / shape / "config.json").write_text(json.dumps(config))
    return [
        Measured(
            name=f"{row['shape']}-{row['dtype']}",
            model_dir=configs / row["shape"],
            dtype=row["dtype"],
            ours=tuple(row["ours"]),
            vllm=tuple(row["vllm"]),
            prompt_tokens_per_token=tuple(row["prompt_tokens_per_token"]),
        )
        for row in data["rows"]
    ]


def _mean_cpu_s(rates: tuple[float, float]) -> float:
    return sum(1 / rate for rate in rates) / len(rates)


def main() -> None:
    with tempfile.TemporaryDirectory() as configs:
        rows = {row.name: row for row in measured_rows(Path(configs))}
        tiny, wide, wide16 = rows["tiny-256-float32"], rows["76M-float32"], rows["76M-bfloat16"]
        for engine in ("ours", "vllm"):
            (tiny_cpu, wide_cpu, wide16_cpu) = (_mean_cpu_s(getattr(r, engine)) for r in (tiny, wide, wide16))
            tiny_work, wide_work = (r.flops * (1 + r.prompt_tokens_per_token[0]) for r in (tiny, wide))
            per_flop = (wide_cpu - tiny_cpu) / (wide_work - tiny_work)
            fixed = tiny_cpu - tiny_work * per_flop
            print(
                f"fit, {engine}: float32 {1 / per_flop / 1e9:.1f} GFLOP/CPU-s, bfloat16 "
                f"{wide_work / (wide16_cpu - fixed) / 1e9:.1f}, fixed {fixed * 1e3:.3f} ms a token"
            )
        for row in rows.values():
            predicted = [
                [
                    f"{getattr(CPU_COSTS, e).token_cpu_s(row.flops * (1 + s), row.dtype) * 1e3:.2f}"
                    for s in row.prompt_tokens_per_token
                ]
                for e in ("ours", "vllm")
            ]
            measured = [[f"{1e3 / r:.2f}" for r in getattr(row, e)] for e in ("ours", "vllm")]
            default = CPU_COSTS.breakeven_tokens(job_flops(row.model_dir) or 0, row.dtype)
            print(
                f"{row.name}: {row.flops / 1e6:.1f} MFLOP a token; ms a token at 8 / 32 requests, ours "
                f"{measured[0]} measured, {predicted[0]} by the rule; vLLM {measured[1]}, {predicted[1]}; vLLM "
                f"pays from {[None if b is None else round(b) for b in row.breakevens()]} measured, "
                f"{row.rule_breakevens()} by the rule, {default} as auto logs it"
            )


if __name__ == "__main__":
    main()
