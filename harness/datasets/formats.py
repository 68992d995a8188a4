"""Row formats of the benchmark files we read, and the one ``record_to_sample`` that turns a row into a Sample.

Each source format (FlashRAG jsonl, R1-Searcher jsonl, ``{question, answer[list]}`` json, WebThinker HLE json, the
AIME/BeyondAIME copies, FRAMES, WebWalkerQA, GAIA, PubMedQA, CUPCase, verl parquet, and the Hugging Face originals)
is a ``RowFormat``: which key holds the question, which the gold answer(s), which the id, which carry metadata.
Each benchmark declares its formats (``BenchmarkSpec.row_formats``, in its task file): the Hugging Face original's
first, which the hub rows are read in; a file is read in the declared format its first row fits. A row missing a
field fails with the file, the row number and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai.dataset import Sample


class MalformedRowError(ValueError):
    """A data row lacks a field or holds a value of the wrong kind."""

    def __init__(self, origin: str, row_number: int, field: str, problem: str):
        super().__init__(f"{origin}, row {row_number}: field {field!r} {problem}")
        self.origin, self.row_number, self.field = origin, row_number, field


@dataclass(frozen=True)
class RowFormat:
    """Where one source format keeps the question, the gold answer(s), the id and the metadata of a row.

    Keys may be dotted paths into nested records (``reward_model.ground_truth``). ``ids`` lists candidate id keys;
    a row without any of them is numbered by its 1-based position in the file.
    """

    name: str
    question: str
    answer: str
    ids: tuple[str, ...] = ()
    metadata: tuple[str, ...] = ()
    answer_separator: str | None = None
    source: str | None = None
    """Key naming the benchmark a row belongs to, in files that mix several (verl's ``data_source``)."""

    def matches(self, row: Mapping[str, Any]) -> bool:
        return _lookup(row, self.question) is not _MISSING and _lookup(row, self.answer) is not _MISSING


_VERL_ANSWER_SEPARATOR = "<|answer_split|>"

VERL_PARQUET = RowFormat(
    "verl_parquet",
    question="prompt",
    answer="reward_model.ground_truth",
    ids=("extra_info.index",),
    metadata=("data_source",),
    answer_separator=_VERL_ANSWER_SEPARATOR,
    source="data_source",
)
GAIA = RowFormat(
    "gaia", question="Question", answer="Final answer", ids=("task_id",), metadata=("Level", "file_name")
)
FLASHRAG = RowFormat(
    "flashrag", question="question", answer="golden_answers", ids=("id",), metadata=("metadata.type",)
)
BEYOND_AIME_MARSRL = RowFormat(
    "beyond_aime_marsrl", question="query", answer="ans_box", ids=("qid",), metadata=("source",)
)
AIME2024_HF = RowFormat("aime2024_hf", question="Problem", answer="Answer", ids=("ID",))
FRAMES_HF = RowFormat(
    "frames_hf", question="Prompt", answer="Answer", ids=("Unnamed: 0",), metadata=("reasoning_types",)
)
WEBTHINKER = RowFormat(
    "webthinker",
    question="Question",
    answer="answer",
    ids=("task_id", "id"),
    metadata=(
        "answer_type",
        "category",
        "raw_subject",
        "Level",
        "domain",
        "type",
        "difficulty_level",
        "lang",
    ),
)
PROBLEM_ANSWER = RowFormat(
    "problem_answer", question="problem", answer="answer", ids=("id",), metadata=("url",)
)
PUBMEDQA_HF = RowFormat("pubmedqa_hf", question="question", answer="final_decision", ids=("pubid",))
CUPCASE_HF = RowFormat(
    "cupcase_hf",
    question="clean_case_presentation",
    answer="correct_diagnosis",
    ids=("case_id", "id"),
    metadata=("distractor1", "distractor2", "distractor3"),
)
QUESTION_ANSWER = RowFormat(
    "question_answer",
    question="question",
    answer="answer",
    ids=("id", "idx"),
    metadata=("answer_type", "category", "raw_subject"),
)

ROW_FORMATS: tuple[RowFormat, ...] = (
    VERL_PARQUET,
    GAIA,
    FLASHRAG,
    BEYOND_AIME_MARSRL,
    AIME2024_HF,
    FRAMES_HF,
    WEBTHINKER,
    PROBLEM_ANSWER,
    PUBMEDQA_HF,
    CUPCASE_HF,
    QUESTION_ANSWER,
)
"""Every format, most specific first: a file is read in the first of its benchmark's formats that its row fits."""


def file_format(
    row: Mapping[str, Any], declared: Sequence[RowFormat], origin: str, benchmark: str
) -> RowFormat:
    """The format, of the ``declared`` ones, of a file whose first row is ``row``; most specific first (two
    declared formats a row could fit -- FlashRAG's and ``question_answer`` -- are told apart by the stricter)."""
    for row_format in ROW_FORMATS:
        if row_format in declared and row_format.matches(row):
            return row_format
    known = "; ".join(f"{f.name}: {f.question!r} + {f.answer!r}" for f in declared)
    raise MalformedRowError(
        origin,
        1,
        "question/answer",
        f"not found: the row has keys {sorted(row)}; {benchmark}'s known formats are {known}",
    )


_MISSING = object()


def _lookup(row: Mapping[str, Any], key: str) -> Any:
    value: Any = row
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _question_text(value: Any) -> str | None:
    """A question string, or the last user turn of a chat-format prompt (verl)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value and all(isinstance(m, Mapping) for m in value):
        user_turns = [m.get("content") for m in value if m.get("role") == "user"]
        return user_turns[-1] if user_turns and isinstance(user_turns[-1], str) else None
    return None


def _gold_answers(value: Any, separator: str | None) -> list[str] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, str):
        parts = value.split(separator) if separator else [value]
        golds = [part.strip() for part in parts if part.strip()]
        return golds or None
    if isinstance(value, Sequence) and value and all(isinstance(v, str | int | float) for v in value):
        return [str(v) for v in value]
    return None


def row_id(row: Mapping[str, Any], row_format: RowFormat, row_number: int) -> str:
    """The row's id: the first id key it has, else its 1-based row number."""
    for key in row_format.ids:
        value = _lookup(row, key)
        if value is not _MISSING and value is not None and str(value) != "":
            return str(value)
    return str(row_number)


def row_source(row: Mapping[str, Any], row_format: RowFormat) -> str | None:
    """The benchmark a row of a mixed file belongs to (``None`` for single-benchmark formats)."""
    if row_format.source is None:
        return None
    value = _lookup(row, row_format.source)
    return None if value is _MISSING else str(value)


def record_to_sample(
    row: Mapping[str, Any], row_format: RowFormat, *, origin: str, row_number: int, benchmark: str
) -> Sample:
    """One data row as an Inspect Sample: the question as input, every gold answer in the target."""
    if not isinstance(row, Mapping):
        raise MalformedRowError(origin, row_number, "(row)", f"is a {type(row).__name__}, expected an object")
    raw_question = _lookup(row, row_format.question)
    if raw_question is _MISSING:
        raise MalformedRowError(origin, row_number, row_format.question, "is missing")
    question = _question_text(raw_question)
    if not question or not question.strip():
        raise MalformedRowError(origin, row_number, row_format.question, "must be non-empty text")
    raw_answer = _lookup(row, row_format.answer)
    if raw_answer is _MISSING:
        raise MalformedRowError(origin, row_number, row_format.answer, "is missing")
    golds = _gold_answers(raw_answer, row_format.answer_separator)
    if golds is None:
        raise MalformedRowError(
            origin,
            row_number,
            row_format.answer,
            f"must be a non-empty string, number or list, got {raw_answer!r}",
        )
    metadata: dict[str, Any] = {"benchmark": benchmark, "row": row_number}
    for key in row_format.metadata:
        value = _lookup(row, key)
        if value is not _MISSING:
            metadata[key] = value
    return Sample(id=row_id(row, row_format, row_number), input=question, target=golds, metadata=metadata)
