"""How many of MATPO's rewards (test vectors: its reward manager's combination) the project's MATPO reward
reproduces exactly: ours now (``mara_bench.trainer.methods.matpo.matpo_reward``) and before (main at 2082b24:
``0.9 * acc + 0.1 * fmt_planner``, the workers' format unused).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/matpo_reward_agreement.py
"""

import json
from pathlib import Path

from mara_bench.trainer.methods.matpo import matpo_reward

cases = json.loads(Path("tests/trainer/vectors/matpo_reward.json").read_text())["cases"]
for label, with_workers in (("with workers", True), ("without workers", False)):
    chosen = [c for c in cases if bool(c["worker_fmts"]) == with_workers]
    before = sum(0.9 * c["acc"] + 0.1 * c["planner_fmt"] == c["reward"] for c in chosen)
    after = sum(matpo_reward(c["acc"], c["planner_fmt"], c["worker_fmts"]) == c["reward"] for c in chosen)
    print(f"MATPO reward, rollouts {label}: before {before}/{len(chosen)}, after {after}/{len(chosen)}")
