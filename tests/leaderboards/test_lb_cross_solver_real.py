"""Cross-solver generalization end to end: the real ``tasks/aime.py`` task with the real V-C system, two solver
checkpoints paired with one "trained" Verifier/Corrector, run as a suite, ingested and rendered as MarsRL Table 3.

The mock models (``xsmock/…``) know the bundled AIME 2025 answers: ``xsmock/weak`` always solves wrong,
``xsmock/strong`` always right, and ``xsmock/vc`` verifies honestly and corrects to the gold answer. Expected
matrix: weak = 0 alone, 1 with the system; strong = 1 alone, 1 with the system.
"""

from __future__ import annotations

import re
from functools import cache

from inspect_ai.model import ModelAPI, ModelOutput, ModelUsage, modelapi

from mara_bench.harness.datasets import load_benchmark
from mara_bench.leaderboards.compare import nightly_comparisons
from mara_bench.leaderboards.run import run_suite
from mara_bench.leaderboards.site import render_site
from mara_bench.leaderboards.store import HistoryStore
from mara_bench.leaderboards.suite import parse_suite

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


@cache
def _gold() -> dict[str, str]:
    dataset = load_benchmark("aime2025", data="samples").dataset
    return {str(sample.input): str(sample.target) for sample in dataset}


def _gold_in(prompt: str) -> str:
    return next(answer for question, answer in _gold().items() if question in prompt)


class CrossSolverModel(ModelAPI):
    async def generate(self, input, tools, tool_choice, config):
        prompt = "\n".join(message.text for message in input)
        gold = _gold_in(prompt)
        if "Below is the bug report" in input[-1].text:
            text = f"Corrected solution: \\boxed{{{gold}}}"
        elif "### Problem ###" in prompt:
            answers = BOXED.findall(prompt)
            verdict = "Correct" if answers and answers[-1] == gold else "Wrong"
            text = f"Summary: the final answer was checked.\nCorrectness: {verdict}"
        else:
            text = f"\\boxed{{{gold if self.model_name == 'strong' else '0'}}}"
        output = ModelOutput.from_content(model=self.model_name, content=text)
        output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return output


@modelapi(name="xsmock")
def xsmock():
    return CrossSolverModel


def test_cross_solver_matrix_from_the_real_vc_system(tmp_path):
    roles = {"verifier": "xsmock/vc", "corrector": "xsmock/vc"}
    suite = parse_suite(
        {
            "name": "xs",
            "checkpoints": [
                {"name": "weak + vc", "model": "xsmock/weak", "roles": roles},
                {"name": "strong + vc", "model": "xsmock/strong", "roles": roles},
            ],
            "tasks": [
                {
                    "name": "aime2025",
                    "task": "tasks/aime.py@aime2025",
                    "args": {"data": "samples", "accept_after": 1},
                    "systems": ["vc"],
                    "protocols": ["quick"],
                }
            ],
            "cross_solver": {
                "checkpoints": ["weak + vc", "strong + vc"],
                "tasks": ["aime2025"],
                "system": "vc",
            },
        }
    )
    assert run_suite(suite, str(tmp_path / "logs"), night="2026-02-01")
    store = HistoryStore(str(tmp_path / "history.sqlite"))
    store.ingest(str(tmp_path / "logs"))
    index = render_site(
        store,
        tmp_path / "site",
        "2026-02-01",
        nightly_comparisons(store, "2026-02-01", suite),
        title="xs",
        cross_solver=suite.cross_solver,
        suite_name=suite.name,
    )
    store.close()
    cells = re.findall(
        r"<tr><td>([^<]+)</td><td>([^<]*)</td><td>([^<]*)</td>\s*<td>([^<]*)</td></tr>", index.read_text()
    )
    rows = {solver: (float(alone), float(system), delta) for solver, alone, system, delta in cells}
    assert rows == {"weak + vc": (0.0, 1.0, "+1.000"), "strong + vc": (1.0, 1.0, "+0.000")}
