"""Writes tests/trainer/vectors/matpo_reward.json by running MATPO's own reward combination.

Needs, in a scratch folder outside the repository (argument 1), ``combine.py``: the combination steps of
``SubagentToolRewardManager._call_include_subagent_tool`` and ``_call_only_main_agent`` cut from
mzf666/MATPO@3c41d62d96963ac0512573f9d2e51596720ab379 verl/workers/reward_manager/subagent_tool.py (``self.*`` and
the batch replaced by arguments: the weights of its GRPO configs, 0.9 and 0.1, no gating), with a function
``reward_manager(acc, planner_fmt, worker_fmts)`` that scores one rollout as a batch of its planner's row and one
row per worker rollout (``check_mcp_format``'s values given). The rollouts are random: acc 0/1, 0-4 workers, each
``fmt`` a share k/m of well-formed blocks (m <= 4) or 1.0.
Usage: python docs/experiments/fidelity/matpo_reward_vectors.py /tmp/ref/matpo tests/trainer/vectors/matpo_reward.json
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from combine import reward_manager  # noqa: E402

rng = random.Random(35)


def fmt() -> float:
    blocks = rng.randint(0, 4)
    return 1.0 if blocks == 0 else rng.randint(0, blocks) / blocks


cases = []
for _ in range(120):
    acc = float(rng.randint(0, 1))
    planner, workers = fmt(), [fmt() for _ in range(rng.choice((0, 0, 1, 2, 3, 4)))]
    cases.append({"acc": acc, "planner_fmt": planner, "worker_fmts": workers})
    cases[-1]["reward"] = reward_manager(acc, planner, workers)
source = (
    "mzf666/MATPO@3c41d62d96963ac0512573f9d2e51596720ab379 verl/workers/reward_manager/subagent_tool.py "
    "_call_include_subagent_tool (rollouts with workers) / _call_only_main_agent (without), weights 0.9 / 0.1, "
    "one rollout per batch; written by docs/experiments/fidelity/matpo_reward_vectors.py"
)
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}, indent=1))
