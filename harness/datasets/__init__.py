"""Benchmark datasets: what a benchmark is (``specs``; each is declared in its task file, ``tasks/*.py``), the row
formats of its sources (``formats``), and the loader (``loader.load_spec``, or ``load_benchmark`` by name) that reads a local file or folder,
the Hugging Face Hub, or the bundled samples.
"""

from mara_bench.harness.datasets.files import MissingDataError
from mara_bench.harness.datasets.formats import MalformedRowError
from mara_bench.harness.datasets.hub import DatasetUnavailableError
from mara_bench.harness.datasets.loader import SAMPLES, LoadedBenchmark, load_benchmark, load_spec
from mara_bench.harness.datasets.specs import BENCHMARKS, BenchmarkSpec, get_benchmark

__all__ = [
    "BENCHMARKS",
    "SAMPLES",
    "BenchmarkSpec",
    "DatasetUnavailableError",
    "LoadedBenchmark",
    "MalformedRowError",
    "MissingDataError",
    "get_benchmark",
    "load_benchmark",
    "load_spec",
]
