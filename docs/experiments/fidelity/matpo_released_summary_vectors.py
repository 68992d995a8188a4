"""Writes tests/systems/vectors/matpo_released_worker_summary.json by running MATPO's released worker-summary path:
the recap its ``create_subagent_tool_request`` writes, re-read by its ``final_summary`` (``The main task is:
"(.*?)"``, ``Your current subtask is: "(.*?)"``) into ``generate_agent_summarize_prompt``.

Needs, in a scratch folder outside the repository (argument 1), ``released_summary.py`` holding, cut verbatim from
mzf666/MATPO@3c41d62d96963ac0512573f9d2e51596720ab379: ``generate_agent_summarize_prompt``
(examples/data_preprocess/prompt_utils.py); ``recap(main_query, task_description)``, the ``user_input`` f-string of
``create_subagent_tool_request``; and ``released_worker_summary(current_user_prompt, task_failed)``, the subagent
branch of ``final_summary`` (verl/workers/rollout/sglang_rollout/sglang_rollout.py). Inputs: random queries and
subtasks built from pieces with and without double quotes, newlines and braces, each failed or not.
Usage: python docs/experiments/fidelity/matpo_released_summary_vectors.py /tmp/ref/matpo \
    tests/systems/vectors/matpo_released_worker_summary.json
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from released_summary import recap, released_worker_summary  # noqa: E402

PIECES = [
    "Who wrote",
    '"The Hobbit"',
    "in 1937?",
    'the "Lomir" river',
    "{braces}",
    "line\nbreak",
    '"',
    "x",
    "",
]
rng = random.Random(35)


def text() -> str:
    return " ".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4))).strip()


cases = []
for _ in range(40):
    main_query, subtask, failed = text(), text(), rng.random() < 0.5
    summary = released_worker_summary(recap(main_query, subtask), failed)
    cases.append({"main_query": main_query, "subtask": subtask, "failed": failed, "worker_summary": summary})
source = (
    "mzf666/MATPO@3c41d62d96963ac0512573f9d2e51596720ab379 sglang_rollout.py final_summary (subagent branch) on "
    "the recap of create_subagent_tool_request, into prompt_utils.py generate_agent_summarize_prompt; written by "
    "docs/experiments/fidelity/matpo_released_summary_vectors.py"
)
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}, indent=1))
