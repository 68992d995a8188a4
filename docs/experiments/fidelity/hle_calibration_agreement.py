"""How many HLE calibration test vectors ours reproduces exactly (official for n >= 200, all_bins for all).

Run from the repository root: PYTHONPATH=. python docs/experiments/fidelity/hle_calibration_agreement.py
"""

import json
from pathlib import Path

from mara_bench.judges.hle import calibration_error

VECTORS = Path("tests/judges/vectors/hle_calibration.json")

cases = json.loads(VECTORS.read_text())["cases"]
official = [c for c in cases if len(c["confidence"]) >= 200]
same_official = sum(calibration_error(c["confidence"], c["correct"]) == c["official"] for c in official)
same_printed = sum(
    100 * round(calibration_error(c["confidence"], c["correct"]), 2) == c["official_printed"]
    for c in official
)
same_all_bins = sum(
    calibration_error(c["confidence"], c["correct"], method="all_bins") == c["all_bins"] for c in cases
)
print(f"official exact {same_official}/{len(official)}, printed {same_printed}/{len(official)}")
print(f"all_bins exact {same_all_bins}/{len(cases)}")
