"""How many of M-ASK's released ``parse_response`` values (test vectors, 60 generated replies per agent) the M-ASK
system's parsers reproduce: before (main at 2082b24), after with the defaults, and after with the two switches for
the released behaviours we do not keep set to ``released`` (``empty_query``, ``answer_inference``,
``step_numbers``). A plan's value is its steps, its answer and its steps' keys (``t<number>``).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/mask_parse_agreement.py
"""

import json
import subprocess
from collections import Counter
from pathlib import Path

from mara_bench.harness.systems import mask_parse
from mara_bench.harness.systems.parsing import last_tag, strip_thinking

BEFORE = "2082b24"
old: dict = {}
exec(subprocess.check_output(["git", "show", f"{BEFORE}:harness/systems/mask.py"], text=True), old)  # noqa: S102
vectors = json.loads(Path("tests/systems/vectors/mask_parse_values.json").read_text())
QUESTION, PASSAGES = vectors["question"], vectors["passages"]


def applied(trajectory: list[list[str]], operation: str, number: int | None) -> list[list[str]]:
    """The trajectory (numbered 1..n) after the operation: step ``number`` replaced, or the new step appended."""
    steps = [list(step) for step in trajectory]
    if number is None:
        return [*steps, ["Q", "E"]]
    steps[number - 1] = ["Q", "E"]
    return steps


def before(case: dict) -> object:
    reply = strip_thinking(case["reply"])
    match case["role"]:
        case "plan":
            steps, answer = old["parse_plan"](case["reply"])
            return [list(step) for step in steps], answer, [f"t{i}" for i in range(1, len(steps) + 1)]
        case "search":
            query = last_tag(reply, "search")
            return ("search" if query else ("end" if "<end>" in reply else "invalid")), query or None
        case "summary":
            return last_tag(reply, "evidence") or reply
        case "update":
            operation, index = old["parse_update"](case["reply"], len(case["trajectory"]))
            return applied(case["trajectory"], operation, None if index is None else index + 1)
    return last_tag(reply, "final_answer") or reply


def after(case: dict, switches: str) -> object:
    match case["role"]:
        case "plan":
            reading = mask_parse.plan_values(case["reply"], QUESTION, "final_answer")
            numbers = reading.numbers if switches == "released" else range(1, len(reading.steps) + 1)
            keys = [f"t{n}" for n in numbers]
            return [list(step) for step in reading.steps], reading.answer, keys
        case "search":
            action = mask_parse.search_action(case["reply"], "released" if switches == "released" else "end")
            return action.action, action.query
        case "summary":
            return mask_parse.evidence(case["reply"], "capital of Arvena", PASSAGES)
        case "update":
            return applied(
                case["trajectory"],
                *mask_parse.update_operation(case["reply"], list(range(1, len(case["trajectory"]) + 1))),
            )
    trajectory = [tuple(step) for step in case["trajectory"]]
    inference = "released" if switches == "released" else "skip"
    return mask_parse.final_answer(case["reply"], trajectory, "final_answer", inference)


def reference(case: dict) -> object:
    match case["role"]:
        case "plan":
            return case["steps"], case["answer"], case["keys"]
        case "search":
            return case["action"], case["query"]
        case "summary":
            return case["evidence"]
        case "update":
            return case["updated"]
    return case["answer"]


for label, ours in (
    ("before", before),
    ("after, defaults", lambda case: after(case, "defaults")),
    ("after, switches released", lambda case: after(case, "released")),
):
    same = Counter(case["role"] for case in vectors["cases"] if ours(case) == reference(case))
    total = Counter(case["role"] for case in vectors["cases"])
    print(
        f"{label}: {sum(same.values())}/{len(vectors['cases'])} ({', '.join(f'{r} {same[r]}/{total[r]}' for r in total)})"
    )
gaps = sum(
    c["role"] == "plan" and c["keys"] != [f"t{i}" for i in range(1, len(c["keys"]) + 1)]
    for c in vectors["cases"]
)
print(f"plans whose released keys are not t1..tn (renumbered by default): {gaps}/60")
