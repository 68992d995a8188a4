"""Writes tests/judges/vectors/hle_calibration.json by running the two reference implementations.

Needs, in a scratch folder outside the repository (argument 1): ``official_calib.py`` holding ``calib_err`` cut
from centerforaisafety/hle hle_eval/run_judge_results.py (mirror NaciTech/hle@206609465c42b6b8f87381dc348bf39fb85da3b1)
with ``import numpy as np``, and ``ie_metrics.py`` = inspect_evals 0.28.0 (PyPI) src/inspect_evals/hle/metrics.py.
Usage: python docs/experiments/fidelity/hle_calibration_vectors.py /tmp/ref/hle tests/judges/vectors/hle_calibration.json
"""

import json
import random
import sys
from pathlib import Path

import numpy as np
from inspect_ai.scorer import SampleScore, Score

sys.path.insert(0, sys.argv[1])
import ie_metrics  # noqa: E402
from official_calib import calib_err  # noqa: E402

SIZES = [1, 3, 40, 99, 100, 150, 199, 200, 201, 250, 299, 300, 350, 417, 500, 640]


def confidences(rng: random.Random, kind: int, n: int) -> list[float]:
    """Heavy ties on a few levels, integers 0-100, non-integers (truncated by inspect_evals), or all equal."""
    if kind == 0:
        return [rng.choice([0, 50, 80, 90, 95, 100]) for _ in range(n)]
    if kind == 1:
        return [rng.randint(0, 100) for _ in range(n)]
    if kind == 2:
        return [rng.choice([70, 85, 90]) + rng.choice([0.0, 0.25, 0.5, 0.9]) for _ in range(n)]
    return [rng.choice([60, 100])] * n


rng = random.Random(24)
cases = []
for i in range(48):
    n = SIZES[i % len(SIZES)] if i < 32 else rng.randint(200, 700)
    conf = confidences(rng, i % 4, n)
    corr = [rng.random() < 0.5 for _ in range(n)]
    official = float(calib_err(np.array(conf) / 100, np.array(corr), p="2", beta=100)) if n >= 100 else None
    scores = [
        SampleScore(score=Score(value={"score": "C" if ok else "I", "confidence": c}), sample_id=j)
        for j, (c, ok) in enumerate(zip(conf, corr, strict=True))
    ]
    cases.append(
        {
            "confidence": conf,
            "correct": corr,
            "official": official,
            "all_bins": float(ie_metrics.cerr()(scores)),
            "official_printed": None if official is None else 100 * round(official, 2),
        }
    )
source = {
    "official": "centerforaisafety/hle hle_eval/run_judge_results.py calib_err(np.array(confidence) / 100, "
    "np.array(correct), p='2', beta=100), read at the mirror NaciTech/hle@206609465c42b6b8f87381dc348bf39fb85da3b1",
    "all_bins": "UKGovernmentBEIS/inspect_evals src/inspect_evals/hle/metrics.py cerr(), PyPI inspect-evals 0.28.0, "
    "scores {'score': 'C'|'I', 'confidence': c}",
    "generator": "docs/experiments/fidelity/hle_calibration_vectors.py (seed 24); official is null where the "
    "official code crashes (n < 100)",
}
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}))
