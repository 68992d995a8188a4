"""Multi-process training on the CPU as a user launches it: ``torchrun --nproc_per_node 2`` (gloo) runs
``mara train`` on the grpo-toy recipe for 2 steps, once with ``parallel: replicate`` and once with
``parallel: fsdp``; both end with the same exported weights (to float rounding: replicate's plain parameters step
with the fused AdamW kernel, FSDP's sharded ones with ``foreach``), and those moved from the base model.
(``test_distributed_update.py`` holds the other half: 2 ranks on fixed rollouts equal one process.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "trainer" / "recipes" / "grpo-toy.yaml"


def torchrun_train(recipe: Path, out: Path) -> dict[str, torch.Tensor]:
    """``torchrun --standalone --nproc_per_node 2 -m mara_bench.harness.cli train RECIPE --out OUT --steps 2``; the
    exported weights of its last step."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    command += ["-m", "mara_bench.harness.cli", "train", str(recipe), "--out", str(out), "--steps", "2"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert f"run directory: {out}" in done.stdout
    return load_file(out / "exports" / "step_2" / "model.safetensors")


@pytest.mark.slow
def test_torchrun_two_gloo_ranks_replicate_and_fsdp_train_identical_weights(tmp_path):
    weights = {}
    for parallel in ("replicate", "fsdp"):
        recipe = tmp_path / f"grpo-toy-{parallel}.yaml"
        settings = yaml.safe_load(RECIPE.read_text())
        # FSDP lays rows out as bucket (shared-prefix, the default, falls back there): both runs do, bit for bit
        settings["parallel"], settings["optim"]["batching"] = parallel, "bucket"
        recipe.write_text(yaml.safe_dump(settings))
        weights[parallel] = torchrun_train(recipe, tmp_path / parallel)
    base = load_file(tmp_path / "replicate" / "base-model" / "model.safetensors")
    replicate, fsdp = weights["replicate"], weights["fsdp"]
    assert replicate.keys() == fsdp.keys() == base.keys()
    for name, value in replicate.items():
        torch.testing.assert_close(fsdp[name], value, rtol=0, atol=1e-5)
    assert max((value - base[name]).abs().max().item() for name, value in replicate.items()) > 1e-3
