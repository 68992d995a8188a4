"""A toy look-up QA task for the tiny method recipes (MARS, MATPO, M-ASK), with its own offline toolbox.

Each question asks for the capital of an invented country ("What is the capital of Arvena?" -> "Lomir"); a small
corpus holds one passage per country. The task builds a real BM25 index of that corpus (``harness.retrieval``)
into a temporary directory and serves it through ``harness.tools`` as ``search`` (the local backend) and
``retrieve`` (or one of them, ``tools``) -- the same tool code as evaluation, with no network. Tools the systems
may also name (``scholar``, ``browse``, ``python``) are not offered: calling them returns a tool error to the agent.

The outcome reward is the exact match (``judges.lexical``) of the episode's final answer, the 1/0 ``acc`` the
methods combine as their papers say; ``answer`` is the gold the MarsRL and M-ASK rewards read directly.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.retrieval.index import build_index
from harness.systems.types import Episode, Toolbox
from harness.tools import build_toolbox
from judges.lexical import score

CAPITALS = {
    "Arvena": "Lomir",
    "Belcor": "Tarsin",
    "Caldris": "Vemora",
    "Dunmark": "Ostrel",
    "Elsport": "Quarin",
    "Ferrane": "Salvio",
    "Gostavia": "Huldun",
    "Hyrmont": "Pellar",
}
"""Invented country -> capital: answers no pretrained model knows, so only the corpus can supply them."""

TOOLS = ("search", "retrieve")
"""The tools the corpus can serve; a recipe offers a subset (``tools``) so that a system's prompt lists exactly the
tools its evaluation offers (MARS's ``-T tools=`` takes ``search``, not ``retrieve``)."""


@dataclass
class LookupTask:
    """Questions (``{"id", "question", "answer"}``), an exact-match reward and the corpus toolbox."""

    items: list[dict[str, Any]]
    toolbox: Toolbox
    index_dir: tempfile.TemporaryDirectory = field(repr=False)
    """Holds the BM25 index for as long as the task lives."""

    def reward(self, item: dict[str, Any], episode: Episode) -> float:
        return float(score(episode.final_answer or "", item["answer"])["em"])

    @property
    def index(self) -> Path:
        """The BM25 index directory (``-T index=`` of a harness QA task scoring on this corpus)."""
        return Path(self.index_dir.name) / "index"

    def benchmark_rows(self) -> list[dict[str, Any]]:
        """The questions as rows of the FlashRAG QA format, for ``-T data=`` of ``tasks/qa.py``."""
        return [
            {"id": item["id"], "question": item["question"], "golden_answers": [item["answer"]]}
            for item in self.items
        ]


def write_corpus(path: Path) -> None:
    """One wiki-18-style passage (``"title\\ntext"``) per country."""
    lines = [
        json.dumps({"id": f"c{index}", "contents": f'"{country}"\nThe capital of {country} is {capital}.'})
        for index, (country, capital) in enumerate(CAPITALS.items())
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def lookup_task(n_prompts: int = len(CAPITALS), k: int = 2, tools: Sequence[str] = TOOLS) -> LookupTask:
    """The first ``n_prompts`` countries' questions; searches return the top ``k`` passages; the toolbox serves
    ``tools`` (a non-empty subset of ``TOOLS``)."""
    if not 1 <= n_prompts <= len(CAPITALS) or k < 1:
        raise ValueError(
            f"lookup_task: need 1 <= n_prompts <= {len(CAPITALS)} and k >= 1; got {n_prompts}, {k}"
        )
    if not tools or not set(tools) <= set(TOOLS):
        raise ValueError(f"lookup_task: tools {list(tools)} must be a non-empty subset of {', '.join(TOOLS)}")
    directory = tempfile.TemporaryDirectory(prefix="mara-lookup-")
    corpus, index = Path(directory.name) / "corpus.jsonl", Path(directory.name) / "index"
    write_corpus(corpus)
    build_index(corpus, index, kind="bm25", progress=False)
    items = [
        {"id": f"capital-{index}", "question": f"What is the capital of {country}?", "answer": capital}
        for index, (country, capital) in enumerate(list(CAPITALS.items())[:n_prompts])
    ]
    task = LookupTask(items, build_toolbox(list(tools), index=str(index), k=k), directory)
    assert task.index == index
    return task
