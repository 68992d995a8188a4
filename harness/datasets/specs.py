"""One spec per benchmark: where it lives on Hugging Face (id, config, split, pinned revision), which local files
hold it, which rows belong to it, and the judge that scores it by default.

Revisions: a real commit sha where one could be found; ``None`` otherwise, in which case the loader resolves the
revision it actually read at load time and records it in the log's task metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any

from judges.named import lookup

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
    text = resources.files("harness.datasets").joinpath("gaia_text_103_ids.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def in_gaia_text_103(row: Mapping[str, Any]) -> bool:
    """Keep the 103 GAIA-text validation questions (MATPO/WebThinker's subset) of the official 2023 set."""
    return str(row.get("task_id")) in _gaia_text_ids()


@dataclass(frozen=True)
class BenchmarkSpec:
    """Everything the loader needs to know about one benchmark."""

    name: str
    hf_path: str
    split: str
    judge: str
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


_FLASHRAG = "RUC-NLPIR/FlashRAG_datasets"

DAPO_WRAPPER = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n",
    '\n\nRemember to put your answer on its own line after "Answer:".',
)
"""DAPO-Math-17k's instruction around every problem (BytedTsinghua-SIA/DAPO-Math-17k ``prompt``)."""


def _flashrag(
    name: str,
    config: str,
    split: str,
    files: tuple[str, ...],
    sources: tuple[str, ...],
    train_files: tuple[str, ...] = (),
) -> BenchmarkSpec:
    # FlashRAG_datasets publishes no release tags; the revision read is recorded at load time. Its ``train``
    # splits are the papers' training sets: NQ + HotpotQA (M-ASK, seeds/004 §4.1), MuSiQue (MATPO, seeds/002
    # "Dataset and Base Model"), TriviaQA / HotpotQA / 2Wiki / MuSiQue (MARS's QA part, seeds/000 C.7).
    return BenchmarkSpec(
        name=name,
        hf_path=_FLASHRAG,
        hf_config=config,
        split=split,
        judge="lexical",
        instruction="direct_qa",
        question_template="direct_qa_user",
        local_files=files,
        source_names=sources,
        train_split="train" if train_files else None,
        train_files=train_files,
    )


BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        BenchmarkSpec(
            name="hle",
            hf_path="cais/hle",
            split="test",
            revision="5a81a4c7271a2a2a312b9a690f0c2fde837e4c29",
            gated=True,
            judge="hle",
            instruction="direct_hle",  # the official code's one SYSTEM_PROMPT for every question type
            local_files=("hle/hle_text_500_webthinker.json",),
            row_filter=text_only("image"),
        ),
        BenchmarkSpec(
            name="aime2025",
            hf_path="math-ai/aime25",
            split="test",
            revision="563bb8404243c5f09de6ec262f2db674fe5bce9b",
            judge="math",
            instruction="direct_math",
            local_files=("aime2025/aime2025_test.jsonl",),
        ),
        # Maxwell-Jia/AIME_2024 and ByteDance-Seed/BeyondAIME: no commit sha found; recorded at load time.
        BenchmarkSpec(
            name="aime2024",
            hf_path="Maxwell-Jia/AIME_2024",
            split="train",
            judge="math",
            instruction="direct_math",
            local_files=("aime2024/aime2024_test.jsonl",),
        ),
        BenchmarkSpec(
            name="beyond_aime",
            hf_path="ByteDance-Seed/BeyondAIME",
            split="test",
            judge="math",
            instruction="direct_math",
            local_files=("beyond_aime/beyond_aime.jsonl",),
        ),
        BenchmarkSpec(
            name="gaia",
            hf_path="gaia-benchmark/GAIA",
            hf_config="2023_all",
            split="validation",
            revision="682dd723ee1e1697e00360edccf2366dc8418dd9",
            gated=True,
            judge="gaia",
            instruction="direct_gaia",
            local_files=("gaia/dev.json", "gaia/metadata.jsonl", "2023/validation/metadata.parquet"),
            row_filter=text_only("file_name"),
            subset=in_gaia_text_103,
        ),
        # A training set only (its one split is "train"). MarsRL (seeds/001 §4.1, liushulinle/MarsRL) names no
        # training set; DAPO-Math-17k (the DAPO paper that seeds/001 cites for BeyondAIME) is the open math RL set
        # this benchmark offers for `task: {benchmark: dapo_math, judge: math, system: vc}`. open-r1's copy is the
        # original's distinct problems once each (the original repeats every problem); no commit sha found:
        # the revision read is recorded at load time.
        BenchmarkSpec(
            name="dapo_math",
            hf_path="open-r1/DAPO-Math-17k-Processed",
            hf_config="all",
            split="train",
            judge="math",
            instruction="direct_math",
            local_files=("dapo_math/train.parquet", "dapo_math/train.jsonl"),
            source_names=("math_dapo",),
            question_wrapper=DAPO_WRAPPER,
        ),
        # callanwu/WebWalkerQA and google/frames-benchmark: no commit sha found; recorded at load time.
        BenchmarkSpec(
            name="webwalkerqa",
            hf_path="callanwu/WebWalkerQA",
            split="main",
            judge="equivalence",
            local_files=("webwalkerqa/webwalkerqa_test_680.json",),
        ),
        BenchmarkSpec(
            name="frames",
            hf_path="google/frames-benchmark",
            split="test",
            judge="equivalence",
            local_files=("frames/frames_824.jsonl",),
        ),
        _flashrag(
            "nq",
            "nq",
            "test",
            ("nq/nq_open_test_full_3610.json", "nq/nq_test_1k_subsample.jsonl"),
            ("nq",),
            train_files=("nq/train.jsonl",),
        ),
        _flashrag(
            "triviaqa",
            "triviaqa",
            "test",
            ("triviaqa/triviaqa_test_1k_subsample.jsonl",),
            ("tq", "triviaqa"),
            train_files=("triviaqa/train.jsonl",),
        ),
        _flashrag("popqa", "popqa", "test", ("popqa/popqa_test_1k_subsample.jsonl",), ("popqa",)),
        _flashrag(
            "hotpotqa",
            "hotpotqa",
            "dev",
            ("hotpotqa/hotpotqa_dev_full_7405.json", "hotpotqa/hotpotqa_500.jsonl"),
            ("hotpotqa",),
            train_files=("hotpotqa/train.jsonl",),
        ),
        _flashrag(
            "twowiki",
            "2wikimultihopqa",
            "dev",
            ("2wikimultihopqa/2wiki_dev_full_12576.json", "2wikimultihopqa/2wiki_500.jsonl"),
            ("2wiki", "2wikimultihopqa"),
            train_files=("2wikimultihopqa/train.jsonl",),
        ),
        _flashrag(
            "musique",
            "musique",
            "dev",
            ("musique/musique_dev_full_2417.json", "musique/musique_500.jsonl"),
            ("musique",),
            train_files=("musique/train.jsonl",),
        ),
        _flashrag(
            "bamboogle",
            "bamboogle",
            "test",
            ("bamboogle/bamboogle_test.jsonl", "bamboogle/bamboogle_r1searcher.jsonl"),
            ("bamboogle",),
        ),
        # MARS's Biology & Medicine part (seeds/000 C.7, Table 8: 500 sampled): PubMedQA's 1,000 expert-labelled
        # questions, its only split "train", gold yes / no / maybe. No commit sha found; recorded at load time.
        BenchmarkSpec(
            name="pubmedqa",
            hf_path="qiaojin/PubMedQA",
            hf_config="pqa_labeled",
            split="train",
            judge="lexical",
            instruction="direct_qa",
            question_template="direct_qa_user",
            local_files=("pubmedqa/pqa_labeled.parquet", "pubmedqa/train.jsonl"),
        ),
        # MARS's Biology & Medicine part (seeds/000 C.7, Table 8: 250 sampled): CUPCase's 3,562 case reports, its
        # only split "test", gold the free-text diagnosis, asked with the CUPCase paper's free-text prompt and judged
        # as MARS rewards every trajectory (C.3: HLE's judge prompt). No commit sha found; recorded at load time.
        BenchmarkSpec(
            name="cupcase",
            hf_path="ofir408/CupCase",
            split="test",
            judge="hle",
            local_files=("cupcase/test-00000-of-00001.parquet", "cupcase/test.jsonl"),
            question_frame="cupcase_free_text",
        ),
        _flashrag(
            "ambigqa", "ambig_qa", "dev", ("ambigqa/ambigqa_dev_full_2002.json",), ("ambigqa", "ambig_qa")
        ),
    )
}


def get_benchmark(name: str) -> BenchmarkSpec:
    return lookup(BENCHMARKS, name, "benchmark")
