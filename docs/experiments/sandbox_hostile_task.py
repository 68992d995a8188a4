"""The end-to-end check of docs/experiments/sandbox.md: the react system on a scripted model whose one python call
per sample is a hostile program (the programs and the agent of tests/tools/test_python_hostile_in_eval.py).

Run from the repository root: ``PYTHONPATH=. .venv/bin/inspect eval docs/experiments/sandbox_hostile_task.py``
(``-T isolation=unisolated`` runs the deep tree without bubblewrap).
"""

import sys
import tempfile
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample

from mara_bench.harness.retrieval import build_index
from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.testing import scripted_model
from mara_bench.judges.scorers import math_scorer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
from test_python_hostile_in_eval import PROGRAMS, agent  # noqa: E402


@task
def hostile(isolation: str = "bwrap") -> Task:
    index = Path(tempfile.gettempdir()) / "mara-hostile-index"  # the search tool's corpus, built once
    if not (index / "manifest.json").exists():
        build_index(ROOT / "tests" / "tools" / "data" / "corpus.jsonl", index, kind="bm25", progress=False)
    programs = list(PROGRAMS) if isolation == "bwrap" else ["deep"]
    return Task(
        dataset=[Sample(id=name, input=f"{name}: what is 6*7?", target="42") for name in programs],
        solver=system_solver(
            get_system("react").setup(
                dict(index=str(index), python_timeout=20, python_memory_mb=256, python_sandbox=isolation)
            )
        ),
        scorer=math_scorer(),
        model=scripted_model(agent),
    )
