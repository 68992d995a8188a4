"""MarsRL Verifier verdicts read as their author meant (by construction), before (main at 2082b24) and after.

Generated reports: every verdict value below, each in four layouts (the paper's ``**Correctness:** v`` line; that
line followed by a prose line mentioning correctness; ``Correctness:`` with the value on the next line; a findings
list mentioning "incorrectness" before the line). The meant verdict: pass for "Correct" and its listed synonyms, fail
for "Wrong"/"Incorrect"/"Not correct", and no pass (unparsable) for hedges and anything else.

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/marsrl_verdict_agreement.py
"""

import subprocess

from mara_bench.harness.systems.vc import parse_verdict

BEFORE = "2082b24"
old: dict = {}
exec(subprocess.check_output(["git", "show", f"{BEFORE}:harness/systems/vc.py"], text=True), old)  # noqa: S102

MEANT = {
    **dict.fromkeys(["Correct", "CORRECT", "Correct.", "Right", "True", "Yes", "correct (with gaps)"], True),
    **dict.fromkeys(["Correct -- no errors", "Correct \u2014 no errors", "Correctly solved"], True),
    **dict.fromkeys(["Wrong", "Incorrect", "Not correct", "wrong."], False),
    **dict.fromkeys(
        ["Partially correct", "Mostly correct", "Correct or wrong", "Wrong, but the answer is correct"], None
    ),
    **dict.fromkeys(["Correct in part", "maybe", "Right, mostly", "Not wrong", "False", "No"], None),
}
LAYOUTS = [
    "**List of Findings:**\n* none\n\n**Correctness:** {v}",
    "**Correctness:** {v}\nI have checked the correctness of each step.",
    "Correctness:\n{v}",
    "**List of Findings:**\n* the incorrectness claim in step 2 is unfounded\n\n- **Correctness**: {v}",
]
reports = [(layout.format(v=value), meant) for value, meant in MEANT.items() for layout in LAYOUTS]
before = sum(old["parse_verdict"](r) is meant for r, meant in reports)
after = sum(parse_verdict(r) is meant for r, meant in reports)
false_pass = {
    "before": sum(old["parse_verdict"](r) is True and meant is not True for r, meant in reports),
    "after": sum(parse_verdict(r) is True and meant is not True for r, meant in reports),
}
print(
    f"verdicts as meant: before {before}/{len(reports)}, after {after}/{len(reports)}; false passes {false_pass}"
)
