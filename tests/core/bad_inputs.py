"""The bad-input battery of issue 23 (item 4): each case runs a real command (``mara train``, ``mara nightly``,
``inspect eval``) on one bad input in a fresh folder and says whether it *held*: a nonzero exit, exactly one line
of output, naming what it must name, no traceback, and none of the files it must not leave behind.

``test_bad_inputs.py`` runs every case as a test. Run as a script it counts the cases that hold in the checkout
it lives in (so it can be copied into an older checkout to count before -> after)::

    PYTHONPATH=. python tests/core/bad_inputs.py
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY_MODEL = "tiny"
"""Name of the tiny model folder each case's working folder gets (built once per battery)."""
BAD_ARGS_SUITE = f"""name: bad
checkpoints:
  - name: tiny
    model: local/{TINY_MODEL}
tasks:
  - name: aime2025
    task: {ROOT}/tasks/aime.py@aime2025
    args: {{data: samples, bogus: 1}}
"""


@dataclass(frozen=True)
class BadInput:
    """One bad input and what a user must see."""

    name: str
    command: list[str]
    """Arguments after ``python -m``, run in the case's working folder."""
    names: str
    """Text the one line must contain (the file, key or argument at fault)."""
    files: dict[str, str | bytes] = field(default_factory=dict)
    """Files to write first (relative path -> content)."""
    setup: Callable[[Path], None] | None = None
    """Anything else to prepare in the working folder."""
    env: dict[str, str] = field(default_factory=dict)
    left_behind: tuple[str, ...] = ()
    """Paths that must not exist afterwards (nothing started, nothing half-written)."""


@dataclass(frozen=True)
class Outcome:
    held: bool
    exit_code: int
    output: str
    leftovers: list[str]


def _truncated_weights(work: Path) -> None:
    shutil.copytree(work / TINY_MODEL, work / "cut")
    os.truncate(work / "cut" / "model.safetensors", 1000)


def _no_tokenizer(work: Path) -> None:
    shutil.copytree(work / TINY_MODEL, work / "bare")
    for path in (work / "bare").glob("tokenizer*"):
        path.unlink()


def _cut_checkpoint(work: Path) -> None:
    step = work / "run" / "checkpoints" / "step_1"
    step.mkdir(parents=True)
    (step / "state.pt").write_bytes(b"PK\x03\x04" + bytes(400))
    (step.parent / "latest").write_text("step_1")


def _out_folder(work: Path) -> None:
    (work / "out").mkdir()


def _huge_audit(work: Path) -> None:
    with open(work / "audit.big", "wb") as file:
        file.truncate(300_000_000)  # sparse: 300 MB on paper, nothing on disk


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _bad_manifest(work: Path) -> None:
    _tar(work / "bad.tar", {"manifest.json": b'{"format": "mara-tool-snapshot", "version": 2, "snapshot": '})


def _good_snapshot(work: Path) -> None:
    """A valid one-entry snapshot tar, built with the standard library alone (the battery runs in old checkouts)."""

    def canonical(value) -> bytes:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    request = {"tool": "search", "arguments": {"query": "q"}, "variant": {}}
    response = canonical({"text": "a", "tool_text": False, "documents": [], "sources": [], "error": None})
    key, blob = hashlib.sha256(canonical(request)).hexdigest(), hashlib.sha256(response).hexdigest()
    row = {"key": key, "tool": "search", "request": request, "blob": blob, "status": "ok", "recorded_at": 1.0}
    digest = "sha256:" + hashlib.sha256(f"{key} {blob}\n".encode()).hexdigest()
    manifest = {"format": "mara-tool-snapshot", "version": 2, "snapshot": "s", "id": digest, "entries": 1}
    _tar(
        work / "s.tar",
        {
            "manifest.json": json.dumps(manifest).encode(),
            "entries.jsonl": json.dumps(row).encode(),
            f"blobs/{blob}.z": zlib.compress(response),
        },
    )


TRAIN = ["harness.cli", "train"]
AUDIT = [
    "inspect_ai",
    "eval",
    f"{ROOT}/tasks/aime.py@aime2025",
    "--model",
    "mockllm/model",
    "--log-dir",
    "logs",
]
AUDIT += ["-T"]
TOOLS = ["harness.cli", "tools"]
NIGHTLY = ["harness.cli", "nightly", "suite.yaml"]
CASES = [
    BadInput("empty recipe", [*TRAIN, "empty.yaml", "--out", "run", "--steps", "1"], "empty.yaml",
             files={"empty.yaml": ""}, left_behind=("run",)),
    BadInput("task.factory that does not import", [*TRAIN, "r.yaml", "--out", "run"], "task.factory",
             files={"r.yaml": "task: {factory: 'nosuch.tasks:make'}\nsteps: 1\n"}, left_behind=("run",)),
    BadInput("truncated safetensors in model.path", [*TRAIN, "r.yaml", "--out", "run"], "model.safetensors",
             files={"r.yaml": "model: {path: cut}\nsteps: 1\n"}, setup=_truncated_weights, left_behind=("run",)),
    BadInput("model.path without a tokenizer", [*TRAIN, "r.yaml", "--out", "run"], "tokenizer",
             files={"r.yaml": "model: {path: bare}\nsteps: 1\n"}, setup=_no_tokenizer, left_behind=("run",)),
    BadInput("truncated state.pt on --resume", [*TRAIN, "r.yaml", "--out", "run", "--resume"], "state.pt",
             files={"r.yaml": "steps: 2\n"}, setup=_cut_checkpoint, left_behind=("run/base-model",)),
    BadInput("unknown task argument in a suite", [*NIGHTLY, "--out", "out"], "bogus",
             files={"suite.yaml": BAD_ARGS_SUITE}, left_behind=("out",)),
    BadInput("--db at a corrupt file", [*NIGHTLY, "--out", "out", "--no-run", "--db", "bad.sqlite"], "--db",
             files={"suite.yaml": BAD_ARGS_SUITE, "bad.sqlite": os.urandom(3000)}, setup=_out_folder),
    BadInput("--db with an unknown URL scheme", [*NIGHTLY, "--out", "out", "--no-run", "--db", "foo://x"],
             "--db", files={"suite.yaml": BAD_ARGS_SUITE}, setup=_out_folder),
    BadInput("--no-run into a missing folder", [*NIGHTLY, "--out", "missing/out", "--no-run"], "--out",
             files={"suite.yaml": BAD_ARGS_SUITE}, left_behind=("missing",)),
    BadInput("--night with path separators", [*NIGHTLY, "--out", "out", "--night", "../../x"], "--night",
             files={"suite.yaml": BAD_ARGS_SUITE}, left_behind=("out", "x")),
    BadInput("binary MARA_CHECKPOINTS file",
             ["inspect_ai", "eval", f"{ROOT}/tasks/aime.py@aime2025", "--model", "local/tiny", "-T", "data=samples",
              "--limit", "1", "--log-dir", "logs"], "MARA_CHECKPOINTS",
             files={"ckpt.yaml": bytes(range(256)) * 8}, env={"MARA_CHECKPOINTS": "ckpt.yaml"},
             left_behind=("logs",)),
    BadInput("binary -T audit= file", [*AUDIT, "audit=audit.bin"], "audit.bin",
             files={"audit.bin": bytes(range(256)) * 8}, left_behind=("logs",)),
    BadInput("50,000-deep -T audit= line", [*AUDIT, "audit=audit.jsonl"], "audit.jsonl:1",
             files={"audit.jsonl": "[" * 50_000 + "]" * 50_000 + "\n"}, left_behind=("logs",)),
    BadInput("300 MB -T audit= file", [*AUDIT, "audit=audit.big"], "audit.big", setup=_huge_audit,
             left_behind=("logs",)),
    BadInput("empty -T second_grader=", [*AUDIT, "second_grader="], "second_grader", left_behind=("logs",)),
    BadInput("mara tools import of a cut manifest", [*TOOLS, "import", "bad.tar", "--store", "store"],
             "manifest.json", setup=_bad_manifest, left_behind=("store",)),
    BadInput("mara tools import --as a name with escape codes", [*TOOLS, "import", "s.tar", "--as", "a\x1b[31m\nb",
             "--store", "store"], "is not allowed", setup=_good_snapshot, left_behind=("store",)),
]  # fmt: skip


def build_tiny_model(folder: Path) -> Path:
    """The tiny model the cases copy or name (built with the checkout's own ``mara tiny-model``)."""
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "tiny-model", str(folder)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=True,
    )
    return folder


def run_case(case: BadInput, work: Path, tiny_model: Path) -> Outcome:
    """Run ``case`` in the empty folder ``work`` and judge what it printed and left."""
    (work / TINY_MODEL).symlink_to(tiny_model, target_is_directory=True)
    for name, content in case.files.items():
        path = work / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if case.setup:
        case.setup(work)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "1000", **case.env}
    env.setdefault("MARA_DATA_DIR", str(ROOT / "harness" / "datasets" / "samples"))
    done = subprocess.run(
        [sys.executable, "-m", *case.command], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    output = (done.stdout + done.stderr).strip()
    lines = [line for line in output.splitlines() if line.strip()]
    leftovers = [name for name in case.left_behind if (work / name).exists()]
    held = (
        done.returncode != 0
        and len(lines) == 1
        and case.names in lines[0]
        and "Traceback" not in output
        and not leftovers
    )
    return Outcome(held, done.returncode, output, leftovers)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mara-bad-inputs-") as scratch:
        tiny = build_tiny_model(Path(scratch) / "tiny-model")
        held = 0
        for number, case in enumerate(CASES):
            work = Path(scratch) / f"case-{number}"
            work.mkdir()
            outcome = run_case(case, work, tiny)
            held += outcome.held
            last = outcome.output.splitlines()[-1][:150] if outcome.output else ""
            extra = f" left {', '.join(outcome.leftovers)}" if outcome.leftovers else ""
            print(
                f"{'held  ' if outcome.held else 'FAILED'} {case.name}: exit {outcome.exit_code}{extra}: {last}"
            )
        print(f"{held} of {len(CASES)} bad inputs held")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
