"""A toy look-up QA task for the tiny method recipes (MARS, MATPO, M-ASK), with its own offline toolbox.

Each question asks for the capital of an invented country ("What is the capital of Arvena?" -> "Lomir"); a small
corpus holds one passage per country. The task builds a real BM25 index of that corpus (``mara_bench.harness.retrieval``)
into a temporary directory and serves it through ``mara_bench.harness.tools`` as ``search`` (the local backend) and
``retrieve`` (or one of them, ``tools``) -- the same tool code as evaluation, with no network. Tools the systems
may also name (``scholar``, ``browse``, ``python``) are not offered: calling them returns a tool error to the agent.

Two kinds of entities:

* the hand-written ``CAPITALS`` (the default; the tiny recipes): 8 countries, asked again every epoch;
* ``generated: true`` (the learning recipes): ``n_prompts`` countries drawn by ``seed`` from the invented-name pool
  (``mara_bench.trainer.tasks.names``), so a run of ``steps x prompts_per_step <= n_prompts`` questions meets a fresh country
  every time and remembering a pair cannot pay; ``heldout_prompts`` further countries form the held-out split
  (``heldout``), never trained on. Each generated passage also names a neighbour ("Arvena borders Belcor"), so a
  search for a country returns its own passage and its neighbour's, whose capital is the careless pick -- a
  different one for every question. With ``neighbour_capital_first`` a passage states its neighbour's capital
  before its own ("Arvena borders Belcor, and the capital of Belcor is Tarsin. The capital of Arvena is Lomir."):
  copying the first capital a search returns is then wrong, and only reading whose capital it is answers.

The outcome reward is the exact match (``mara_bench.judges.lexical``) of the episode's final answer, the 1/0 ``acc`` the
methods combine as their papers say; ``answer`` is the gold the MarsRL and M-ASK rewards read directly.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mara_bench.core.episodes import Episode, Toolbox
from mara_bench.harness.tools import build_toolbox
from mara_bench.judges.lexical import score
from mara_bench.trainer.tasks.names import name_pool

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

POOL = name_pool(set(CAPITALS) | set(CAPITALS.values()))
"""The generated entities (country, capital) the ``generated`` splits draw from."""

KNOWN_CAPITALS = (*CAPITALS.values(), *(capital for _, capital in POOL))
"""Every capital any look-up corpus can state (what a demonstration policy looks for in a text)."""

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
    heldout: list[dict[str, Any]] = field(default_factory=list)
    """The held-out split: questions on countries no training question names (empty unless ``generated``)."""

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


def passages(
    pairs: Sequence[tuple[str, str]], neighbours: bool, neighbour_capital_first: bool = False
) -> list[str]:
    """One wiki-18-style passage (``"title\\ntext"``) per (country, capital); with ``neighbours`` each also says
    the country borders the next one of ``pairs`` (cyclically), and with ``neighbour_capital_first`` it opens with
    that neighbour and its capital."""
    texts = []
    for index, (country, capital) in enumerate(pairs):
        own = f"The capital of {country} is {capital}."
        neighbour, neighbour_capital = pairs[(index + 1) % len(pairs)]
        if not neighbours:
            text = own
        elif neighbour_capital_first:
            text = (
                f"{country} borders {neighbour}, and the capital of {neighbour} is {neighbour_capital}. {own}"
            )
        else:
            text = f"{own} {country} borders {neighbour}."
        texts.append(f'"{country}"\n{text}')
    return texts


def write_corpus(path: Path, texts: Sequence[str]) -> None:
    """The passages as a JSONL corpus the index builder reads."""
    lines = [json.dumps({"id": f"c{index}", "contents": text}) for index, text in enumerate(texts)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def questions(pairs: Sequence[tuple[str, str]], split: str) -> list[dict[str, Any]]:
    """One question per (country, capital), ids ``capital-<split>-<n>`` (the fixed table's: ``capital-<n>``)."""
    prefix = "capital-" if split == "fixed" else f"capital-{split}-"
    return [
        {"id": f"{prefix}{index}", "question": f"What is the capital of {country}?", "answer": capital}
        for index, (country, capital) in enumerate(pairs)
    ]


def lookup_task(
    n_prompts: int = len(CAPITALS),
    k: int = 2,
    tools: Sequence[str] = TOOLS,
    generated: bool = False,
    heldout_prompts: int = 0,
    seed: int = 0,
    neighbour_capital_first: bool = False,
) -> LookupTask:
    """``n_prompts`` questions (the first countries of ``CAPITALS``, or ``generated`` ones drawn by ``seed``) and
    ``heldout_prompts`` held-out ones (``generated`` only); searches return the top ``k`` passages; the toolbox
    serves ``tools`` (a non-empty subset of ``TOOLS``); ``neighbour_capital_first`` (``generated`` only) puts each
    passage's neighbour capital before its own."""
    most = len(POOL) - heldout_prompts if generated else len(CAPITALS)
    if not 1 <= n_prompts <= most or k < 1 or heldout_prompts < 0:
        raise ValueError(
            f"lookup_task: need 1 <= n_prompts <= {most}, k >= 1 and heldout_prompts >= 0; got {n_prompts}, {k}, "
            f"{heldout_prompts}"
        )
    if heldout_prompts and not generated:
        raise ValueError(
            "lookup_task: heldout_prompts needs generated: true (the fixed table has no held-out split)"
        )
    if neighbour_capital_first and not generated:
        raise ValueError(
            "lookup_task: neighbour_capital_first needs generated: true (the fixed table's passages name no neighbour)"
        )
    if not tools or not set(tools) <= set(TOOLS):
        raise ValueError(f"lookup_task: tools {list(tools)} must be a non-empty subset of {', '.join(TOOLS)}")
    if generated:
        drawn = random.Random(seed).sample(POOL, n_prompts + heldout_prompts)
        train, held = drawn[:n_prompts], drawn[n_prompts:]
        texts = passages(train, True, neighbour_capital_first) + (
            passages(held, True, neighbour_capital_first) if held else []
        )
        items, heldout = questions(train, "train"), questions(held, "heldout")
    else:
        table = list(CAPITALS.items())
        texts, items, heldout = passages(table, neighbours=False), questions(table[:n_prompts], "fixed"), []
    directory = tempfile.TemporaryDirectory(prefix="mara-lookup-")
    corpus, index = Path(directory.name) / "corpus.jsonl", Path(directory.name) / "index"
    write_corpus(corpus, texts)
    from mara_bench.harness.retrieval.index import (
        build_index,  # bm25s loads only when a look-up index is built
    )

    build_index(corpus, index, kind="bm25", progress=False)
    task = LookupTask(items, build_toolbox(list(tools), index=str(index), k=k), directory, heldout)
    assert task.index == index
    return task
