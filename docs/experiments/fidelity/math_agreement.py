"""Right verdicts on the math answer vectors: ours, math-verify's and inspect_evals' AIME scorer's.

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/math_agreement.py
"""

import json
from pathlib import Path

from mara_bench.judges.math import extract_answer, is_equivalent

cases = json.loads(Path("tests/judges/vectors/math_answers.json").read_text())["cases"]
ours = sum(is_equivalent(extract_answer(c["response"]), c["gold"]) is c["right"] for c in cases)
wrongly_accepted = sum(
    is_equivalent(extract_answer(c["response"]), c["gold"]) and not c["right"] for c in cases
)
print(f"ours: {ours}/{len(cases)} right ({wrongly_accepted} wrongly accepted)")
for name in ("math_verify", "inspect_evals_aime"):
    right = sum(c[name] is c["right"] for c in cases)
    accepted = sum(c[name] and not c["right"] for c in cases)
    print(f"{name}: {right}/{len(cases)} right ({accepted} wrongly accepted)")
