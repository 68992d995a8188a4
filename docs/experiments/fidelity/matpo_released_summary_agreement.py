"""How many of MATPO's released worker-summary requests (test vectors) the worker summary request reproduces: with
the query and subtask passed whole (before, and the default ``summary_query="whole"``) and with
``summary_query="released"`` (the recap re-read as the released code does).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/matpo_released_summary_agreement.py
"""

import json
from pathlib import Path

from mara_bench.harness.prompts.sets import prompt_set
from mara_bench.harness.systems.matpo import released_summary_inputs, worker_summary_prompt

prompts = prompt_set("matpo", "paper")
cases = json.loads(Path("tests/systems/vectors/matpo_released_worker_summary.json").read_text())["cases"]
whole = released = 0
for case in cases:
    query, subtask, failed = case["main_query"], case["subtask"], case["failed"]
    [_, recap] = prompts.messages("worker", {"main_query": query, "task_description": subtask})
    whole += worker_summary_prompt(prompts, query, subtask, failed) == case["worker_summary"]
    released += (
        worker_summary_prompt(prompts, *released_summary_inputs(recap["content"]), failed)
        == case["worker_summary"]
    )
quoted = sum('"' in c["main_query"] + c["subtask"] for c in cases)
print(
    f"released worker summaries reproduced ({quoted}/{len(cases)} inputs hold a double quote): whole {whole}/"
    f"{len(cases)}, summary_query=released {released}/{len(cases)}"
)
