"""Load a benchmark as Inspect samples, in the loader order, and say exactly what was loaded.

Order: ``data=`` (a file or a folder) → ``MARA_DATA_DIR`` when it holds the benchmark → Hugging Face at the pinned
revision → the bundled samples, only when asked for with ``data="samples"``. Rows are filtered by the benchmark's
rules (text-only; its published subset, GAIA-text 103, in any source holding it; the benchmark's rows of a mixed
file), then by ``ids`` and ``limit``; nothing is dropped silently: the provenance records the source, its revision
or file sha256, the subset picked, the row counts, and a sha256 of the id list.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample

from mara_bench.harness.datasets.files import (
    ChosenFile,
    MissingDataError,
    benchmark_files,
    bundled_samples_path,
    choose_file,
    file_sha256,
    find_benchmark_file,
    read_rows,
)
from mara_bench.harness.datasets.fingerprints import check_belongs
from mara_bench.harness.datasets.formats import (
    MalformedRowError,
    RowFormat,
    file_format,
    record_to_sample,
    row_source,
)
from mara_bench.harness.datasets.hub import hub_rows, resolved_revision
from mara_bench.harness.datasets.specs import (
    INSTRUCTION_KEY,
    QUESTION_TEMPLATE_KEY,
    BenchmarkSpec,
    RowFilter,
    get_benchmark,
)
from mara_bench.harness.invocation import user_path
from mara_bench.harness.prompts import fill, load_prompt

logger = logging.getLogger(__name__)

SAMPLES = "samples"
"""``data="samples"``: the small bundled sample file of the benchmark."""
DATA_DIR_ENV = "MARA_DATA_DIR"


@dataclass(frozen=True)
class LoadedBenchmark:
    """The samples to run and the provenance recorded in the log's task metadata."""

    dataset: MemoryDataset
    provenance: dict[str, Any]


def parse_ids(ids: str | int | Sequence[str | int] | None) -> list[str] | None:
    """``ids`` as a list: a comma-separated string, a file of one id per line (``#`` comments), or a list."""
    if ids is None:
        return None
    if isinstance(ids, int | float):
        return [str(ids)]
    if isinstance(ids, str):
        path = user_path(ids)
        if "," not in ids and path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            wanted = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
        else:
            wanted = [part.strip() for part in ids.split(",") if part.strip()]
    else:
        wanted = [str(item).strip() for item in ids]
    if not wanted:
        raise ValueError(
            f"ids={ids!r} names no ids; pass a comma-separated list or a file with one id per line"
        )
    return wanted


def _add_instruction(sample: Sample, spec: BenchmarkSpec) -> None:
    """Record the benchmark's answer-format instruction and its question template for this sample (single-agent
    systems use them)."""
    if spec.instruction is None:
        return
    metadata = sample.metadata if sample.metadata is not None else {}
    sample.metadata = {**metadata, INSTRUCTION_KEY: load_prompt(spec.instruction)}
    if spec.question_template is not None:
        sample.metadata[QUESTION_TEMPLATE_KEY] = load_prompt(spec.question_template)


def _unwrap_question(sample: Sample, spec: BenchmarkSpec) -> None:
    """Remove the source's fixed instruction around the question (``BenchmarkSpec.question_wrapper``) where it has
    it, so the question is the bare problem."""
    if spec.question_wrapper is None or not isinstance(sample.input, str):
        return
    prefix, suffix = spec.question_wrapper
    sample.input = sample.input.removeprefix(prefix).removesuffix(suffix).strip()


def _frame_question(sample: Sample, spec: BenchmarkSpec) -> None:
    """Put the question into the benchmark's official prompt (``BenchmarkSpec.question_frame``) where it has one."""
    if spec.question_frame is None or not isinstance(sample.input, str):
        return
    sample.input = fill(load_prompt(spec.question_frame), {"question": sample.input})


def _samples_from_rows(
    rows: list[Any],
    *,
    spec: BenchmarkSpec,
    origin: str,
    filters: Sequence[RowFilter],
    row_format: RowFormat | None,
) -> tuple[list[Sample], int]:
    """Samples of the rows belonging to ``spec`` (and passing ``filters``), plus the count before filtering; the
    rows are in ``row_format``, or (``None``, a file) in the one of the spec's formats the first row fits."""
    if not rows:
        raise MalformedRowError(origin, 1, "(file)", "has no rows")
    if not isinstance(rows[0], Mapping):
        raise MalformedRowError(origin, 1, "(row)", f"is a {type(rows[0]).__name__}, expected an object")
    if row_format is None:
        row_format = file_format(rows[0], spec.row_formats, origin, spec.name)
    samples: list[Sample] = []
    first_row_of_id: dict[str, int] = {}
    sources_seen: set[str] = set()
    for row_number, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise MalformedRowError(
                origin, row_number, "(row)", f"is a {type(row).__name__}, expected an object"
            )
        source = row_source(row, row_format)
        if source is not None:
            sources_seen.add(source)
            if source.lower() not in spec.source_names:
                continue
        if not all(keep(row) for keep in filters):
            continue
        sample = record_to_sample(row, row_format, origin=origin, row_number=row_number, benchmark=spec.name)
        _unwrap_question(sample, spec)
        _frame_question(sample, spec)
        _add_instruction(sample, spec)
        sample_id = str(sample.id)
        if sample_id in first_row_of_id:
            raise MalformedRowError(
                origin,
                row_number,
                row_format.ids[0] if row_format.ids else "(id)",
                f"repeats id {sample_id!r} of row {first_row_of_id[sample_id]}; ids must be unique",
            )
        first_row_of_id[sample_id] = row_number
        samples.append(sample)
    if row_format.source is not None and not samples:
        raise MalformedRowError(
            origin,
            1,
            row_format.source,
            f"names no {spec.name} rows (looked for {', '.join(spec.source_names)}; found {', '.join(sorted(sources_seen))})",
        )
    return samples, len(rows)


def data_dir() -> Path | None:
    """``MARA_DATA_DIR`` (relative: from the directory the command ran in); set but not a folder raises."""
    named = os.environ.get(DATA_DIR_ENV)
    if not named:
        return None
    root = user_path(named)
    if not root.is_dir():
        raise MissingDataError(
            f"{DATA_DIR_ENV}={named} is not a folder (looked for {root}; a relative path is taken from the "
            "directory the command ran in): point it at the shared data folder or unset it"
        )
    return root


def _local_location(spec: BenchmarkSpec, data: str | None, data_file: str | None) -> ChosenFile | None:
    if data is not None and data != SAMPLES:
        return find_benchmark_file(spec, user_path(data), data_file)
    root = data_dir() if data is None else None
    candidates = benchmark_files(spec, root) if root is not None else []
    if candidates:
        return choose_file(spec, candidates, data_file, f"{DATA_DIR_ENV}={root}")
    if data_file is not None:
        raise MissingDataError(
            f"-T data_file={data_file} picks one of a data folder's files; give the folder with -T data=<folder> "
            f"or {DATA_DIR_ENV}"
        )
    return None


def _say_which_file(spec: BenchmarkSpec, chosen: ChosenFile) -> None:
    """One console line when a folder held several candidate files: which one is read, and how to pick another."""
    if chosen.others:
        others = ", ".join(path.name for path in chosen.others)
        logger.warning(
            f"{spec.name}: reading {chosen.path} (the folder also holds {others}; "
            f"pick one with -T data_file={chosen.others[0].stem})"
        )


def _select(samples: list[Sample], wanted: list[str] | None, limit: int | None, origin: str) -> list[Sample]:
    if wanted is not None:
        by_id = {str(sample.id): sample for sample in samples}
        missing = [item for item in wanted if item not in by_id]
        if missing:
            shown = ", ".join(missing[:10]) + (
                f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""
            )
            examples = ", ".join(list(by_id)[:3])
            raise ValueError(f"ids not found in {origin}: {shown}; ids there look like: {examples}")
        samples = [by_id[item] for item in dict.fromkeys(wanted)]
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit={limit!r} must be a positive integer")
        samples = samples[:limit]
    return samples


def ids_sha256(samples: Sequence[Sample]) -> str:
    """sha256 of the sample ids in run order, one per line."""
    return hashlib.sha256("\n".join(str(sample.id) for sample in samples).encode("utf-8")).hexdigest()


def load_benchmark(
    benchmark: str,
    *,
    data: str | None = None,
    ids: str | int | Sequence[str | int] | None = None,
    limit: int | None = None,
    split: str | None = None,
    data_file: str | None = None,
    force_data: bool = False,
) -> LoadedBenchmark:
    """``load_spec`` of the registered benchmark named ``benchmark``; ``split`` ``"train"`` reads its training
    split (``BenchmarkSpec.for_split``), ``None`` the evaluation split."""
    return load_spec(
        get_benchmark(benchmark).for_split(split),
        data=data,
        ids=ids,
        limit=limit,
        data_file=data_file,
        force_data=force_data,
    )


def load_spec(
    spec: BenchmarkSpec,
    *,
    data: str | None = None,
    ids: str | int | Sequence[str | int] | None = None,
    limit: int | None = None,
    data_file: str | None = None,
    force_data: bool = False,
) -> LoadedBenchmark:
    """The samples of the benchmark ``spec`` (see the module docstring for the loader order) and their
    provenance. ``data_file`` picks one of a data folder's candidate files by name; a local file holding another
    benchmark's rows is refused unless ``force_data`` (``mara_bench.harness.datasets.fingerprints``)."""
    wanted = parse_ids(ids)
    chosen = _local_location(spec, data, data_file)
    hub_format: RowFormat | None = None
    if chosen is not None:
        origin, rows, sha256 = str(chosen.path), read_rows(chosen.path), file_sha256(chosen.path)
        check_belongs(spec.name, chosen.path, rows, sha256, force_data)
        _say_which_file(spec, chosen)
        source: dict[str, Any] = {
            "source": "local",
            "path": origin,
            "sha256": sha256,
            "other_candidates": [str(path) for path in chosen.others],
            "forced": force_data,
        }
    elif data == SAMPLES or (data is None and spec.bundled):
        path = bundled_samples_path(spec.name)
        origin, rows = f"bundled samples {path.name}", read_rows(path)
        source = {"source": "samples", "path": str(path), "sha256": file_sha256(path)}
    else:
        origin, rows = f"{spec.hf_path} ({spec.hf_config or 'default'}/{spec.split})", hub_rows(spec)
        hub_format = spec.row_formats[0]
        source = {
            "source": "huggingface",
            "hf_path": spec.hf_path,
            "hf_config": spec.hf_config,
            "split": spec.split,
            "revision": resolved_revision(spec),
        }
    subset = (
        spec.subset if spec.subset and any(isinstance(r, Mapping) and spec.subset(r) for r in rows) else None
    )
    filters = [keep for keep in (spec.row_filter, subset) if keep is not None]
    samples, rows_read = _samples_from_rows(
        rows, spec=spec, origin=origin, filters=filters, row_format=hub_format
    )
    selected = _select(samples, wanted, limit, origin)
    provenance = {
        "benchmark": spec.name,
        **source,
        "rows_read": rows_read,
        "subset": subset.__name__ if subset else None,
        "rows_in_benchmark": len(samples),
        "row_count": len(selected),
        "ids_requested": wanted,
        "limit": limit,
        "ids_sha256": ids_sha256(selected),
    }
    dataset = MemoryDataset(selected, name=spec.name, location=origin, shuffled=False)
    return LoadedBenchmark(dataset=dataset, provenance=provenance)
