"""Writes tests/judges/vectors/gaia_scorer.json by running GAIA's official ``question_scorer``.

Needs, in a scratch folder outside the repository (argument 1), ``official_scorer.py``: the official scorer's
functions (huggingface.co/spaces/gaia-benchmark/leaderboard scorer.py) as copied verbatim into inspect_evals 0.28.0
(PyPI) src/inspect_evals/gaia/scorer.py, from its "copied from the official GAIA scorer" comment on, with the
imports it needs. Usage:
python docs/experiments/fidelity/gaia_scorer_vectors.py /tmp/ref/gaia tests/judges/vectors/gaia_scorer.json
"""

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from official_scorer import question_scorer  # noqa: E402

GOLDS = [
    "apple, banana, cherry",
    "b.c, d.",
    "3; 4.5; x",
    "17",
    "0.5",
    "1,000",
    "sea gull",
    "St. Petersburg",
    "Right",
    "inf",
]
PREDICTIONS = [
    " APPLE ,banana , cherry.",
    "apple, banana, cherry",
    "apple; banana; cherry",
    "apple,banana",
    "b.c, d.",
    "b.c, d",
    "3;4.5;X",
    "3; 4.50; x.",
    "$17",
    "17%",
    "17.0",
    "seventeen",
    "0.5",
    "1000",
    "1,000",
    "seagull",
    "Sea-Gull!",
    "st petersburg",
    "right.",
    "not a number",
    "None",
]
cases = [
    {"prediction": prediction, "gold": gold, "official": question_scorer(prediction, gold)[0]}
    for gold, prediction in itertools.product(GOLDS, PREDICTIONS)
]
source = (
    "GAIA official question_scorer (huggingface.co/spaces/gaia-benchmark/leaderboard scorer.py) as copied "
    "verbatim in UKGovernmentBEIS/inspect_evals src/inspect_evals/gaia/scorer.py, PyPI inspect-evals 0.28.0; "
    "written by docs/experiments/fidelity/gaia_scorer_vectors.py"
)
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}, indent=1))
