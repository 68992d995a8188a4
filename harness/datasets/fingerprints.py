"""Which benchmark a local data file belongs to: a file given with ``-T data=`` for one benchmark but holding
another's rows is refused before any sample runs (``-T force_data=true`` loads it anyway).

``known_files.json`` lists, per benchmark, the files we know: the shared data folder's and the bundled samples,
each by name, sha256, row count and row shape (the first row's keys). A file is another benchmark's when its
sha256 is that of one of that benchmark's files, or when it has the row shape and the row count of one of its
shared data files (an edited copy) and of none of this benchmark's. A shape alone decides nothing (the QA sets
and the math sets share theirs), nor do the bundled samples' few rows.
Rewrite the table after adding a file with ``python scripts/known_files.py <data folder>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mara_bench.harness.datasets.files import bundled_samples_path, file_sha256, read_rows
from mara_bench.harness.datasets.specs import BenchmarkSpec

KNOWN_FILES = "known_files.json"


class ForeignDataError(ValueError):
    """A local data file holds another benchmark's rows."""


@dataclass(frozen=True)
class KnownFile:
    """One file we know the benchmark of."""

    benchmark: str
    name: str
    sha256: str
    rows: int
    keys: tuple[str, ...]
    bundled: bool
    """One of the bundled sample files (a handful of rows: matched by sha256 only)."""


@cache
def known_files() -> tuple[KnownFile, ...]:
    table = json.loads(
        resources.files("mara_bench.harness.datasets").joinpath(KNOWN_FILES).read_text(encoding="utf-8")
    )
    return tuple(
        KnownFile(
            entry["benchmark"],
            entry["name"],
            entry["sha256"],
            entry["rows"],
            tuple(entry["keys"]),
            entry["bundled"],
        )
        for entry in table
    )


def row_shape(rows: list[Any]) -> tuple[str, ...]:
    """The sorted keys of the first row (empty when there is no row object)."""
    return tuple(sorted(rows[0])) if rows and isinstance(rows[0], dict) else ()


def owner(benchmark: str, sha256: str, rows: int, shape: tuple[str, ...]) -> tuple[KnownFile, str] | None:
    """The other benchmark's known file a file matches, and how; None when it may be ``benchmark``'s."""
    files = known_files()
    for known in files:
        if known.sha256 == sha256:
            return None if known.benchmark == benchmark else (known, "its sha256")
    alike = [known for known in files if not known.bundled and (known.rows, known.keys) == (rows, shape)]
    if not alike or any(known.benchmark == benchmark for known in alike):
        return None
    return alike[0], f"its {rows} rows and row shape"


def check_belongs(benchmark: str, path: Path, rows: list[Any], sha256: str, force: bool) -> None:
    """Refuse ``path`` for ``benchmark`` when it holds another benchmark's rows, unless ``force``."""
    match = owner(benchmark, sha256, len(rows), row_shape(rows))
    if match is None or force:
        return
    known, how = match
    raise ForeignDataError(
        f"-T data={path} holds {known.benchmark} rows, not {benchmark} ones ({how} matches {known.benchmark}'s "
        f"{known.name}: keys {', '.join(known.keys)}); give a {benchmark} file, or -T force_data=true to load it"
    )


def known_files_table(folder: Path, specs: Iterable[BenchmarkSpec]) -> list[dict[str, Any]]:
    """The ``known_files.json`` entries of ``specs``: their files in the data folder ``folder`` and their bundled
    samples (``scripts/known_files.py`` writes the table)."""
    entries = []
    for spec in specs:
        paths = [folder / relative for relative in (*spec.local_files, *spec.train_files)]
        sample = bundled_samples_path(spec.name)
        for path in [*paths, sample]:
            if path.is_file():
                rows = read_rows(path)
                entry = {
                    "benchmark": spec.name,
                    "name": path.name,
                    "sha256": file_sha256(path),
                    "rows": len(rows),
                }
                entries.append(entry | {"keys": row_shape(rows), "bundled": path == sample})
    return entries


def write_known_files(folder: Path, specs: Iterable[BenchmarkSpec]) -> Path:
    """Rewrite the package's ``known_files.json`` from ``known_files_table``; returns its path."""
    target = Path(str(resources.files("mara_bench.harness.datasets").joinpath(KNOWN_FILES)))
    target.write_text(json.dumps(known_files_table(folder, specs), indent=1) + "\n", encoding="utf-8")
    return target
