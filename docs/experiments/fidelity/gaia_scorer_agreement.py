"""How many GAIA official-scorer verdicts (test vectors) our default quasi-exact match reproduces, outside the
documented "inf" difference (a gold of ``inf`` officially matches any unparsable prediction).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/gaia_scorer_agreement.py
"""

import json
from pathlib import Path

from mara_bench.judges.gaia import quasi_exact_match

cases = json.loads(Path("tests/judges/vectors/gaia_scorer.json").read_text())["cases"]
compared = [case for case in cases if case["gold"] != "inf"]
same = sum(quasi_exact_match(case["prediction"], case["gold"]) == case["official"] for case in compared)
print(f"official verdicts reproduced: {same}/{len(compared)} (golds other than 'inf')")
