"""How many of MATPO's summary-prompt renderings (test vectors) ours reproduces byte for byte.

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/matpo_summary_agreement.py
"""

import json
from pathlib import Path

from mara_bench.harness.prompts.sets import prompt_set
from mara_bench.harness.systems.matpo import planner_summary_prompt, worker_summary_prompt

cases = json.loads(Path("tests/systems/vectors/matpo_summary_prompts.json").read_text())["cases"]
prompts = prompt_set("matpo", "paper")
same = 0
for case in cases:
    same += planner_summary_prompt(prompts, case["main_query"], case["failed"]) == case["planner_summary"]
    same += (
        worker_summary_prompt(prompts, case["main_query"], case["subtask"], case["failed"])
        == case["worker_summary"]
    )
print(f"byte-identical renderings: {same}/{2 * len(cases)}")
