"""Writes tests/systems/vectors/matpo_summary_prompts.json by running MATPO's own ``generate_agent_summarize_prompt``.

Needs, in a scratch folder outside the repository (argument 1), ``summarize_<commit7>.py`` holding that function cut
verbatim from mzf666/MATPO examples/data_preprocess/prompt_utils.py at each commit below.
Usage: python docs/experiments/fidelity/matpo_summary_vectors.py /tmp/ref/matpo tests/systems/vectors/matpo_summary_prompts.json
"""

import importlib
import json
import sys
from pathlib import Path

COMMITS = ("e97244b9712cfc73009c5a7c0d606a013bf73785", "3c41d62d96963ac0512573f9d2e51596720ab379")
INPUTS = [
    ("What is the capital of Arvena?", "Arvena"),
    ("Who wrote 'The {braces} book'?", 'find the author of "The {braces} book"\nand its year'),
    ("", "x"),
]

sys.path.insert(0, sys.argv[1])
cases = []
for commit in COMMITS:
    generate = importlib.import_module(f"summarize_{commit[:7]}").generate_agent_summarize_prompt
    for main_query, subtask in INPUTS:
        for failed in (False, True):
            planner = generate(main_query, task_failed=failed, agent_type="main_agent")
            worker = generate(subtask, main_query=main_query, task_failed=failed, agent_type="browsing_agent")
            cases.append(
                {"commit": commit, "main_query": main_query, "subtask": subtask, "failed": failed}
                | {"planner_summary": planner, "worker_summary": worker}
            )
source = (
    "mzf666/MATPO examples/data_preprocess/prompt_utils.py generate_agent_summarize_prompt(task_description, "
    "main_query, task_failed, agent_type) run at each case's commit (main_agent -> planner_summary, browsing_agent "
    "-> worker_summary); written by docs/experiments/fidelity/matpo_summary_vectors.py"
)
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}, indent=1))
