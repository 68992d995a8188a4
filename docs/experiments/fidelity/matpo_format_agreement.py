"""How many of MATPO's ``check_mcp_format`` results (test vectors) one agent's format score reproduces: ours now
(``mara_bench.trainer.methods.mcp_format.format_reward``) and the per-agent share used before (main at c6eca9d:
well-formed tool calls among the replies that attempt one, parsed by the system's parser, 0 without an attempt).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/matpo_format_agreement.py
"""

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from mara_bench.harness.prompts.sets import prompt_set
from mara_bench.trainer.methods.mcp_format import format_reward

BEFORE = "c6eca9d"
old = {}
exec(subprocess.check_output(["git", "show", f"{BEFORE}:trainer/methods/matpo.py"], text=True), old)  # noqa: S102


def before(role: str, replies: list[str]) -> float:
    calls = [SimpleNamespace(reply=SimpleNamespace(text=reply)) for reply in replies]
    check = old["planner_call_is_well_formed"] if role == "planner" else old["worker_call_is_well_formed"]
    return old["success_rate"](calls, check)


cases = json.loads(Path("tests/trainer/vectors/matpo_mcp_format.json").read_text())["cases"]
same_before = sum(before(c["role"], c["replies"]) == c["fmt"] for c in cases)
same_after = sum(
    format_reward(prompt_set("matpo", "paper").system_prompt(c["role"]), c["replies"]) == c["fmt"]
    for c in cases
)
print(
    f"MATPO check_mcp_format reproduced: before {same_before}/{len(cases)}, after {same_after}/{len(cases)}"
)
