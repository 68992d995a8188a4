"""Leaderboard test fixtures: logs from real (mock-model) Inspect evals, suite files, and a throwaway PostgreSQL."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from mara_bench.leaderboards.run import run_suite
from mara_bench.leaderboards.suite import parse_suite

FIXTURE_TASKS = str(Path(__file__).with_name("inspect_fixtures.py"))
XSS_ANSWER = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def suite_dict(name: str = "lbtest", **flaky_args) -> dict:
    """Two checkpoints on the arithmetic fixture task (direct and vc): ``good`` is always right; ``flaky`` is wrong
    on every 5th question (i = 0, 5, …, 35 of 40) with ``XSS_ANSWER`` as its answer, unless overridden."""
    flaky = {"wrong_every": 5, "wrong_text": XSS_ANSWER, **flaky_args}
    return {
        "name": name,
        "checkpoints": [
            {"name": "good", "model": "lbmock/arith", "roles": {"grader": "lbmock/judge"}},
            {
                "name": "flaky",
                "model": "lbmock/arith",
                "model_args": flaky,
                "roles": {"grader": "lbmock/judge", "corrector": "lbmock/fixer"},
            },
        ],
        "tasks": [
            {
                "name": "arith",
                "task": f"{FIXTURE_TASKS}@arith",
                "args": {"n": 40},
                "systems": ["direct", "vc"],
            }
        ],
        "comparisons": [{"candidate": "flaky", "baseline": "good"}],
        "cross_solver": {
            "checkpoints": ["good", "flaky"],
            "tasks": ["arith"],
            "system": "vc",
            "alone_score": "solver",
        },
        "settings": {"eval": {"max_tasks": 4}},
    }


def write_suite(path: Path, raw: dict) -> Path:
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def eval_logs(tmp_path_factory) -> Path:
    """Four real eval logs (good/flaky × direct/vc, 40 samples each) of night 2026-01-01; treat as read-only."""
    log_dir = tmp_path_factory.mktemp("lb-logs")
    assert run_suite(parse_suite(suite_dict()), str(log_dir), night="2026-01-01")
    return log_dir


@pytest.fixture
def logs_copy(eval_logs, tmp_path) -> Path:
    """A private copy of ``eval_logs`` that a test may add files to."""
    return Path(shutil.copytree(eval_logs, tmp_path / "logs"))


def _postgres_bin() -> Path | None:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "pg_ctl").exists() and (candidate / "initdb").exists():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server started for the tests (as user ``postgres`` when run as root); skips without pg_ctl."""
    bin_dir = _postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="mara-pg-"))
    if as_user:
        shutil.chown(root, "postgres")
    data, sockets = root / "data", root
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run(
        as_user + [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {sockets} -c listen_addresses='' -c fsync=off"
    subprocess.run(
        as_user
        + [str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-l", str(root / "log"), "start"],
        check=True,
        capture_output=True,
    )
    time.sleep(0.2)
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={sockets}&port={port}"
    finally:
        subprocess.run(
            as_user + [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def make_suite():
    """``make_suite(name="lbtest", **flaky_model_args) -> dict``: the two-checkpoint suite as parsed YAML."""
    return suite_dict


@pytest.fixture
def xss_answer() -> str:
    return XSS_ANSWER
