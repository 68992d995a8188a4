"""Float32 linear layers on one CPU thread: torch's ``F.linear`` (MKL) against oneDNN with a packed weight.

Run: ``python benchmarks/linear_kernels.py``. For each shape (rows x in x out, the layers of SmolLM2-135M and of
the 76M shape) it prints GFLOP per CPU-second of both, the largest difference between their outputs, and
whether each gives a row the same bits at 1, 3, 8, 17 and 32 rows. Measured in
``docs/experiments/engines.md``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import torch

SHAPES = ((576, 1536), (1536, 576), (576, 49152), (2048, 4096), (4096, 2048))
ROWS = (8, 32)


def gflops_per_cpu_s(
    linear: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, width_out: int
) -> float:
    flops = 2 * x.shape[0] * x.shape[1] * width_out
    repeats = max(5, int(3e9 / flops))
    for _ in range(3):
        linear(x)
    cpu = time.process_time()
    for _ in range(repeats):
        linear(x)
    return flops * repeats / (time.process_time() - cpu) / 1e9


def row_invariant(linear: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> bool:
    full = linear(x)
    return all(torch.equal(linear(x[:rows]), full[:rows]) for rows in (1, 3, 8, 17))


def onednn_linear(x: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for rows in ROWS:
        for width_in, width_out in SHAPES:
            x, weight = torch.randn(32, width_in), torch.randn(width_out, width_in) * 0.05
            mkl = functools.partial(torch.nn.functional.linear, weight=weight)
            onednn = functools.partial(onednn_linear, packed=torch.ops.mkldnn._reorder_linear_weight(weight))
            print(
                f"{rows} x {width_in} x {width_out}: F.linear {gflops_per_cpu_s(mkl, x[:rows], width_out):.1f}, "
                f"oneDNN packed {gflops_per_cpu_s(onednn, x[:rows], width_out):.1f} GFLOP/CPU-s; "
                f"largest difference {(mkl(x) - onednn(x)).abs().max().item():.1e}; same bits at any row count: "
                f"F.linear {row_invariant(mkl, x)}, oneDNN {row_invariant(onednn, x)}"
            )


if __name__ == "__main__":
    main()
