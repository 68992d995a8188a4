"""``mara tools``: list, freeze, export and import the snapshots of a tool-response store.

    mara tools list   [--store DIR|URL]
    mara tools freeze NAME [--store ...]
    mara tools export NAME FILE.tar [--store ...]
    mara tools import FILE.tar [--as NAME] [--store ...]

``--store`` defaults as ``-T tool_store`` does (``MARA_TOOL_STORE``, else ``~/.cache/mara-bench/tool-store``); paths
are taken from the directory the command ran in. A problem is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from mara_bench.harness.invocation import user_path
from mara_bench.harness.toolbase.settings import TOOL_STORE_ENV, ToolSettings
from mara_bench.harness.toolcache.archive import Archive, export_snapshot, import_snapshot, read_archive
from mara_bench.harness.toolcache.keys import SAFE_NAME
from mara_bench.harness.toolcache.locations import open_store
from mara_bench.harness.toolcache.store import ResponseStore, Snapshot, StoreError, safe_name


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mara tools", description="Manage recorded tool responses.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_ in (
        ("list", "list the store's snapshots"),
        ("freeze", "make a snapshot read-only and give it its id"),
        ("export", "write a snapshot to one tar file (freezes it)"),
        ("import", "read a snapshot tar file into the store (frozen)"),
    ):
        command = commands.add_parser(name, help=help_)
        command.add_argument("--store", help="the tool store: a folder or an fsspec URL")
        if name in ("freeze", "export"):
            command.add_argument("snapshot")
        if name in ("export", "import"):
            command.add_argument("file", help="the tar file")
        if name == "import":
            command.add_argument("--as", dest="rename", help="import under this snapshot name")
    return parser


def _line(snapshot: Snapshot) -> str:
    """One snapshot, printable whatever a damaged index holds (a name outside the safe alphabet is escaped)."""
    state = f"frozen  {ascii(snapshot.digest)[1:-1]}" if snapshot.frozen else "open"
    name = snapshot.name if SAFE_NAME.fullmatch(snapshot.name) else ascii(snapshot.name)
    return f"{name}  {snapshot.entries} responses  {state}"


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    # --store is never recorded, so like MARA_TOOL_STORE it may carry the storage's credentials (shown redacted)
    environ = {**os.environ, TOOL_STORE_ENV: args.store} if args.store else dict(os.environ)
    location = ToolSettings(environ=environ).tool_store_location()
    try:
        archive = read_archive(user_path(args.file)) if args.command == "import" else None
        if archive is not None and args.rename is not None:
            safe_name(location, args.rename)  # before the store is created
        store = open_store(location, create=archive is not None)
        print(_run(args, store, archive))
    except StoreError as err:
        print(f"mara tools: {err}", file=sys.stderr)
        return 2
    return 0


def _run(args: argparse.Namespace, store: ResponseStore, archive: Archive | None) -> str:
    if args.command == "list":
        return (
            "\n".join(_line(snapshot) for snapshot in store.snapshots()) or f"{store.location}: no snapshots"
        )
    if args.command == "freeze":
        return _line(store.freeze(args.snapshot))
    if args.command == "export":
        path = user_path(args.file)
        snapshot = export_snapshot(store, args.snapshot, path)
        return f"wrote {path}: {_line(snapshot)}"
    snapshot = import_snapshot(store, archive, args.rename)
    return f"imported into {store.location}: {_line(snapshot)}"
