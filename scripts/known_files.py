"""Rewrite ``harness/datasets/known_files.json`` (``mara_bench.harness.datasets.fingerprints``) from every declared
benchmark's files in a data folder and its bundled samples: ``python scripts/known_files.py <data folder>``."""

from __future__ import annotations

import sys
from pathlib import Path

from mara_bench.catalog import BENCHMARKS
from mara_bench.harness.datasets.fingerprints import write_known_files

if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        raise SystemExit("usage: python scripts/known_files.py <data folder> (the shared benchmark data)")
    print(write_known_files(Path(sys.argv[1]), BENCHMARKS.values()))
