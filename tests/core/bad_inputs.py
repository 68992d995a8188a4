"""The bad-input battery of issue 23 (item 4): each case runs a real command (``mara train``, ``mara nightly``,
``inspect eval``) on one bad input in a fresh folder and says whether it *held*: a nonzero exit, exactly one line
of output, naming what it must name, no traceback, and none of the files it must not leave behind.

``test_bad_inputs.py`` runs every case as a test. Run as a script it counts the cases that hold in the checkout
it lives in (so it can be copied into an older checkout to count before -> after), with each command's seconds;
``--all`` adds ``OPTION_CASES``::

    PYTHONPATH=. python tests/core/bad_inputs.py [--all]
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
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
    seconds: float
    """Wall time from starting the command to its exit."""


def _truncated_weights(work: Path) -> None:
    shutil.copytree(work / TINY_MODEL, work / "cut")
    os.truncate(work / "cut" / "model.safetensors", 1000)


def _no_tokenizer(work: Path) -> None:
    shutil.copytree(work / TINY_MODEL, work / "bare")
    for path in (work / "bare").glob("tokenizer*"):
        path.unlink()


def _no_chat_template(work: Path) -> None:
    shutil.copytree(work / TINY_MODEL, work / "untemplated")
    (work / "untemplated" / "chat_template.jinja").unlink()


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


TRAIN = ["mara_bench.harness.cli", "train"]
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
TOOLS = ["mara_bench.harness.cli", "tools"]
NIGHTLY = ["mara_bench.harness.cli", "nightly", "suite.yaml"]
AIME = f"{ROOT}/tasks/aime.py@aime2025"


def inspect_eval(*args: str, task: str = AIME, model: str = f"local/{TINY_MODEL}") -> list[str]:
    """``inspect eval`` of ``task`` on ``model`` (the tiny one: any weight load would print) with ``args``."""
    return ["inspect_ai", "eval", task, "--model", model, "-T", "data=samples", "--limit", "1", "--log-dir", "logs",
            *args]  # fmt: skip


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
    # issue 37: checked before the model's weights load, one line whatever the display
    BadInput("mistyped -T option", inspect_eval("-T", "sytem=vc"), "did you mean 'system'", left_behind=("logs",)),
    BadInput("mistyped -T option, --display none", inspect_eval("-T", "sytem=vc", "--display", "none"),
             "did you mean 'system'", left_behind=("logs",)),
    BadInput("mistyped task name", inspect_eval(task=f"{ROOT}/tasks/aime.py@aime2026"), "did you mean 'aime2025'",
             left_behind=("logs",)),
    BadInput("mistyped package task", inspect_eval(task="mara_bench/aime2026"), "did you mean 'aime2025'",
             left_behind=("logs",)),
    BadInput("mistyped task file", inspect_eval(task=f"{ROOT}/tasks/aim.py"), "tasks/aime.py",
             left_behind=("logs",)),
    BadInput("relative task file run from another folder", inspect_eval(task="tasks/aime.py@aime2025"),
             "tasks/aime.py: no such task file", left_behind=("logs",)),
    BadInput("empty -T second_grader= under inspect eval", inspect_eval("-T", "second_grader="), "second_grader",
             left_behind=("logs",)),
    BadInput("mistyped -M option", inspect_eval("-M", "batchsize=4"), "did you mean 'batch_size'",
             left_behind=("logs",)),
    BadInput("truncated safetensors under inspect eval", inspect_eval(model="local/cut"), "model.safetensors",
             setup=_truncated_weights, left_behind=("logs",)),
    BadInput("local/ model without a chat template", inspect_eval(model="local/untemplated"), "no chat template",
             setup=_no_chat_template, left_behind=("logs",)),
]  # fmt: skip

OPTION_MISTAKES = [
    (["-T", "bogus=1"], "unknown -T option(s) bogus"),
    (["-T", "system=vc", "-T", "acept_after=2"], "did you mean 'accept_after'"),
    (["-T", "system=vc", "-T", "accept_after=x"], "accept_after: must be an integer"),
    (["-T", "system=vc", "-T", "accept_after=0"], "accept_after: must be >= 1"),
    (["-T", "system=mask", "-T", "max_iterations=-1"], "max_iterations: must be >= 0"),
    (["-T", "system=mars", "-T", "sys1=maybe"], "sys1: must be true or false"),
    (["-T", "system=mask", "-T", "prompts=paper"], "prompts: 'paper' is not a valid choice"),
    (["-T", "system=mars", "-T", "k=0"], "k: must be >= 1"),
    (["-T", "system=dirct"], "unknown system 'dirct'"),
    (["-T", "protocol=marsrll"], "unknown protocol 'marsrll'"),
    (["-T", "judge=vibes"], "unknown judge 'vibes'"),
    (["-M", "dtype=fp16"], "dtype: 'fp16' is not a valid choice"),
    (["-M", "batch_wait_ms=-5"], "batch_wait_ms: must be >= 0"),
    (["-M", "max_model_len=long"], "max_model_len: must be an integer"),
]
"""The task and ``-M`` option mistakes of ``test_config_errors.py``, here through ``inspect eval`` on a ``local/``
model (slow: one command each)."""
OPTION_CASES = [
    BadInput(f"inspect eval {' '.join(args)}", inspect_eval(*args), names, left_behind=("logs",))
    for args, names in OPTION_MISTAKES
]


def build_tiny_model(folder: Path) -> Path:
    """The tiny model the cases copy or name (built with the checkout's own ``mara tiny-model``)."""
    subprocess.run(
        [sys.executable, "-m", "mara_bench.harness.cli", "tiny-model", str(folder)],
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
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", *case.command], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    seconds = time.perf_counter() - started
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
    return Outcome(held, done.returncode, output, leftovers, seconds)


def main() -> int:
    cases = CASES + (OPTION_CASES if "--all" in sys.argv else [])
    with tempfile.TemporaryDirectory(prefix="mara-bad-inputs-") as scratch:
        tiny = build_tiny_model(Path(scratch) / "tiny-model")
        held, seconds = 0, []
        for number, case in enumerate(cases):
            work = Path(scratch) / f"case-{number}"
            work.mkdir()
            outcome = run_case(case, work, tiny)
            held += outcome.held
            seconds.append(outcome.seconds)
            last = outcome.output.splitlines()[-1][:150] if outcome.output else ""
            extra = f" left {', '.join(outcome.leftovers)}" if outcome.leftovers else ""
            print(
                f"{'held  ' if outcome.held else 'FAILED'} {outcome.seconds:5.1f} s {case.name}: "
                f"exit {outcome.exit_code}, {len(outcome.output.splitlines())} lines{extra}: {last}"
            )
        print(
            f"{held} of {len(cases)} bad inputs held; median {statistics.median(seconds):.1f} s to the message"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
