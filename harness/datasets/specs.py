"""What a benchmark is (``BenchmarkSpec``): where it lives on Hugging Face (id, config, split, pinned revision),
which local files hold it, which rows belong to it, and the judge that scores it by default. The specs themselves
are declared in the task files (``tasks/*.py``), each registering its own in ``BENCHMARKS`` as it is imported.

Revisions: a real commit sha where one could be found; ``None`` otherwise, in which case the loader resolves the
revision it actually read at load time and records it in the log's task metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mara_bench.core.named import lookup
from mara_bench.harness.datasets.formats import FLASHRAG, QUESTION_ANSWER, VERL_PARQUET, RowFormat

RowFilter = Callable[[Mapping[str, Any]], bool]

INSTRUCTION_KEY = "instruction"
"""Sample metadata key of the benchmark's answer-format instruction (the ``system_prompt`` of single-agent systems)."""
QUESTION_TEMPLATE_KEY = "question_template"
"""Sample metadata key of the user-message template that goes with the instruction (``{question}`` placeholder)."""


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def text_only(key: str) -> RowFilter:
    """Keep rows whose attachment field ``key`` (an image, a file name) is absent or empty."""

    def keep(row: Mapping[str, Any]) -> bool:
        return _is_blank(row.get(key))

    keep.__name__ = f"text_only[{key}]"
    return keep


@cache
def _gaia_text_ids() -> frozenset[str]:
    text = (
        resources.files("mara_bench.harness.datasets")
        .joinpath("gaia_text_103_ids.txt")
        .read_text(encoding="utf-8")
    )
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def in_gaia_text_103(row: Mapping[str, Any]) -> bool:
    """Keep the 103 GAIA-text validation questions (MATPO/WebThinker's subset) of the official 2023 set."""
    return str(row.get("task_id")) in _gaia_text_ids()


@dataclass(frozen=True)
class BenchmarkSpec:
    """Everything the loader needs to know about one benchmark."""

    name: str
    title: str
    """What it is, in a line (the task's summary): ``AIME 2025 I+II (30 problems)``."""
    hf_path: str
    split: str
    judge: str
    row_formats: tuple[RowFormat, ...]
    """The formats its sources come in: the Hugging Face original's first, then its local copies' (FlashRAG's
    jsonl, WebThinker's json, ...); a file in none of them is refused, naming these."""
    local_files: tuple[str, ...]
    """Candidate files inside a data folder (``<folder>/<benchmark dir>/<file>``), preferred first."""
    hf_config: str | None = None
    revision: str | None = None
    gated: bool = False
    row_filter: RowFilter | None = None
    """Applied to every source (the text-only rule)."""
    subset: RowFilter | None = None
    """Picks the published subset out of a source that holds it (the full GAIA validation split, from the hub or
    a local copy); a source holding none of the subset's rows (the synthetic samples) is read whole."""
    source_names: tuple[str, ...] = field(default=())
    """This benchmark's name(s) in files mixing several benchmarks (verl ``data_source``)."""
    instruction: str | None = None
    """The benchmark's official answer-format instruction for single-agent systems: a ``harness/prompts`` name."""
    question_template: str | None = None
    """The user message that goes with the instruction, a ``harness/prompts`` name (FlashRAG's ``Question: {question}``);
    None sends the question as it is."""
    train_split: str | None = None
    """The source's training split (``split: train`` in a training recipe), when it publishes one."""
    train_files: tuple[str, ...] = ()
    """Candidate files of the training split inside a data folder, preferred first."""
    question_wrapper: tuple[str, str] | None = None
    """The fixed text (prefix, suffix) the source wraps every question in -- its own answer-format instruction --
    removed where a question carries it, so the question goes out bare in the benchmark's own template."""
    protocol: str = "default"
    """The protocol its task runs under when ``-T protocol=`` is not given."""
    bundled: bool = False
    """The whole set ships with mara-bench (``harness/datasets/samples/<name>.jsonl``, ``hf_path`` empty): read
    from there unless ``-T data=`` names a file."""
    question_frame: str | None = None
    """The benchmark's official prompt around a row's question, a ``harness/prompts`` name with a ``{question}``
    field, applied when the row is read, so every system gets it (CUPCase's rows hold a bare case presentation;
    its free-text prompt asks for the diagnosis)."""

    def for_split(self, split: str | None) -> BenchmarkSpec:
        """This spec reading ``split``: ``None`` or the evaluation split as it is; ``"train"`` the training split
        (its revision is resolved at load time); anything else is an error naming the splits there are."""
        if split is None or split == self.split:
            return self
        if split == "train" and self.train_split is not None:
            return replace(self, split=self.train_split, local_files=self.train_files, revision=None)
        splits = ", ".join([self.split] + (["train"] if self.train_split else []))
        raise ValueError(f"benchmark {self.name!r} has no split {split!r}; its splits: {splits}")

    @property
    def hf_url(self) -> str:
        return f"https://huggingface.co/datasets/{self.hf_path}"


def flashrag_benchmark(
    *,
    name: str,
    title: str,
    hf_config: str,
    split: str,
    local_files: tuple[str, ...],
    source_names: tuple[str, ...],
    train_files: tuple[str, ...] = (),
) -> BenchmarkSpec:
    """A RUC-NLPIR/FlashRAG_datasets benchmark: rows in FlashRAG's format (or ``question_answer``, or a mixed verl
    file), the direct-QA instruction and user template, the lexical judge, the default protocol."""
    # FlashRAG_datasets publishes no release tags; the revision read is recorded at load time. Its ``train``
    # splits are the papers' training sets: NQ + HotpotQA (M-ASK, arXiv:2601.04703 §4.1), MuSiQue (MATPO, arXiv:2510.04678
    # "Dataset and Base Model"), TriviaQA / HotpotQA / 2Wiki / MuSiQue (MARS's QA part, arXiv:2510.04935 C.7).
    return BenchmarkSpec(
        name=name,
        title=title,
        hf_path="RUC-NLPIR/FlashRAG_datasets",
        hf_config=hf_config,
        split=split,
        judge="lexical",
        row_formats=(FLASHRAG, QUESTION_ANSWER, VERL_PARQUET),
        instruction="direct_qa",
        question_template="direct_qa_user",
        local_files=local_files,
        source_names=source_names,
        train_split="train" if train_files else None,
        train_files=train_files,
    )


BENCHMARKS: dict[str, BenchmarkSpec] = {}
"""Every benchmark the harness knows: each task file's declarations, registered where they are declared
(``mara_bench.harness.task_builder.benchmark``) when the file is imported; ``mara_bench.catalog`` imports them all."""
_DECLARED_IN: dict[str, Path] = {}


def register_benchmark(spec: BenchmarkSpec, *, declared_in: str) -> BenchmarkSpec:
    """Add ``spec``, declared in the file ``declared_in``, to ``BENCHMARKS``. A name another file declares too
    raises naming both; the same file imported again (Inspect loads ``tasks/aime.py`` by its path beside
    ``mara_bench.aime``) keeps the first declaration."""
    where = Path(declared_in).resolve()
    first = _DECLARED_IN.setdefault(spec.name, where)
    if first != where:
        raise ValueError(f"benchmark {spec.name!r} is declared twice: in {first} and in {where}")
    return BENCHMARKS.setdefault(spec.name, spec)


def get_benchmark(name: str) -> BenchmarkSpec:
    return lookup(BENCHMARKS, name, "benchmark")
