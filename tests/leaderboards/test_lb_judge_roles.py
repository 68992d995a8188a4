"""Each paper's protocol keeps its own judge model in a suite: the shipped nightly suite binds no grader over it,
and a checkpoint's extra roles join the task's grader instead of replacing it."""

from __future__ import annotations

from pathlib import Path

from mara_bench.harness.protocols import get_protocol
from mara_bench.leaderboards.run import build_tasks
from mara_bench.leaderboards.suite import load_suite, parse_suite

ROOT = Path(__file__).resolve().parents[2]


def test_nightly_suite_uses_each_papers_judge_model():
    suite = load_suite(ROOT / "leaderboards" / "suites" / "nightly.yaml")
    judged = {p for t in suite.tasks for p in t.protocols if p and get_protocol(p).judge_model}
    assert judged == {"mars", "matpo"}
    assert {get_protocol(p).judge_model for p in judged} == {"openai/gpt-4o", "openai/gpt-4o-mini"}
    assert all("grader" not in checkpoint.roles for checkpoint in suite.checkpoints)


def test_checkpoint_roles_join_the_protocols_grader(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-called")
    suite = parse_suite(
        {
            "name": "roles",
            "checkpoints": [{"name": "c", "model": "mockllm/model", "roles": {"corrector": "mockllm/fixer"}}],
            "tasks": [
                {
                    "name": "hle",
                    "task": f"{ROOT / 'tasks' / 'hle.py'}@hle",
                    "args": {"data": "samples"},
                    "protocols": ["mars"],
                }
            ],
        }
    )
    (task,) = build_tasks(suite, night="2026-01-01")
    assert sorted(task.model_roles) == ["corrector", "grader"]
    assert str(task.model_roles["grader"]) == "openai/gpt-4o"
