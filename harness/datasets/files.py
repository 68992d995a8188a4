"""Local benchmark files: find a benchmark's file in a data folder, read json / jsonl / parquet rows, hash files.

A file that is not what its suffix says (binary bytes in a ``.jsonl``, a damaged ``.parquet``) is a
``MalformedRowError`` naming the file and, for text, the line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from mara_bench.harness.datasets.formats import MalformedRowError
from mara_bench.harness.datasets.specs import BenchmarkSpec

DATA_SUFFIXES = (".jsonl", ".json", ".parquet")
SAMPLES_FOLDER = "samples"
"""The folder of the bundled sample files, one ``<benchmark>.jsonl`` each, beside this module."""


class MissingDataError(FileNotFoundError):
    """A local path given for a benchmark does not exist or does not hold the benchmark's file."""


@dataclass(frozen=True)
class ChosenFile:
    """The benchmark file a run reads, and the other candidate files the folder held (preference order)."""

    path: Path
    others: tuple[Path, ...] = ()


def benchmark_files(spec: BenchmarkSpec, folder: Path) -> list[Path]:
    """The benchmark's files present in ``folder`` (the shared data root or the benchmark's own folder), in the
    benchmark's preference order."""
    found: list[Path] = []
    for relative in spec.local_files:
        for candidate in (folder / relative, folder / Path(relative).name):
            if candidate.is_file() and candidate not in found:
                found.append(candidate)
                break
    return found


def choose_file(spec: BenchmarkSpec, candidates: list[Path], name: str | None, where: str) -> ChosenFile:
    """The preferred candidate, or the one named ``name`` (file name or stem, ``-T data_file=``)."""
    if name is None:
        return ChosenFile(candidates[0], tuple(candidates[1:]))
    named = [path for path in candidates if name in (path.name, path.stem)]
    if not named:
        choices = ", ".join(path.stem for path in candidates)
        raise MissingDataError(
            f"-T data_file={name}: {where} holds no such {spec.name} file; choose one of {choices}"
        )
    return ChosenFile(named[0], tuple(path for path in candidates if path != named[0]))


def find_benchmark_file(spec: BenchmarkSpec, location: Path, name: str | None = None) -> ChosenFile:
    """The benchmark's file: ``location`` itself, or its preferred (or ``name``d) file inside the folder."""
    if not location.exists():
        raise MissingDataError(
            f"data path {str(location)!r} does not exist; pass -T data=<file or folder> for {spec.name}"
        )
    if location.is_file():
        if name is not None:
            raise MissingDataError(
                f"-T data_file={name} picks a file in a folder; -T data={location} is a file"
            )
        return ChosenFile(location)
    candidates = benchmark_files(spec, location)
    if not candidates:
        raise MissingDataError(
            f"folder {str(location)!r} holds no {spec.name} file; expected one of {', '.join(spec.local_files)} "
            f"(relative to the folder), or pass -T data=<file>"
        )
    return choose_file(spec, candidates, name, f"folder {str(location)!r}")


def read_rows(path: Path) -> list[Any]:
    """All rows of a ``.jsonl``, ``.json`` (a list of objects) or ``.parquet`` file."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _read_jsonl(path)
    if suffix == ".json":
        try:
            rows = json.loads(_read_text(path))
        except json.JSONDecodeError as error:
            raise MalformedRowError(str(path), 1, "(file)", f"is not valid JSON: {error}") from error
        if not isinstance(rows, list):
            raise MalformedRowError(
                str(path), 1, "(file)", f"must be a JSON list of rows, got {type(rows).__name__}"
            )
        return rows
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except pa.ArrowException as error:
            raise MalformedRowError(
                str(path), 1, "(file)", f"is not a readable parquet file: {error}"
            ) from error
    raise MissingDataError(f"{str(path)!r} is not a data file; expected one of {', '.join(DATA_SUFFIXES)}")


def _read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; other bytes raise ``MalformedRowError`` naming the file and line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_number = data[: error.start].count(b"\n") + 1
        raise MalformedRowError(
            str(path),
            line_number,
            "(line)",
            "is not UTF-8 text (a binary file?); give a .jsonl, .json or .parquet file",
        ) from error


def _read_jsonl(path: Path) -> list[Any]:
    rows = []
    for line_number, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise MalformedRowError(
                str(path), line_number, "(line)", f"is not valid JSON: {error}"
            ) from error
    return rows


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bundled_samples_path(benchmark: str) -> Path:
    """The bundled sample file of ``benchmark`` (``harness/datasets/samples/<benchmark>.jsonl``)."""
    return Path(
        str(resources.files("mara_bench.harness.datasets").joinpath(SAMPLES_FOLDER, f"{benchmark}.jsonl"))
    )
