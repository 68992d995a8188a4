"""``mara demo``: evaluates a model offline on the bundled sanity set and samples, and says what the scores mean;
without SmolLM2 it builds and runs the tiny model instead."""

from __future__ import annotations

from inspect_ai.log import read_eval_log

from mara_bench.harness.accounting import idle_parts
from mara_bench.harness.demo import DEMO_TASKS, ensure_tiny_model, main


def test_without_smollm2_the_demo_builds_the_tiny_model_and_reports_every_task(tmp_path, monkeypatch, capsys):
    model_dir, log_dir = tmp_path / "tiny", tmp_path / "logs"
    monkeypatch.setenv("MARA_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.setenv("MARA_TINY_MODEL", str(model_dir))
    assert main(["--log-dir", str(log_dir), "--max-tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "run `mara models get smollm2-135m`" in out and "building the tiny model" in out
    assert "sanity [lexical] em=0.000" in out and "aime2025 [math] accuracy=0.000" in out
    assert "every score is 0 by construction" in out
    assert out.count("    reply:") == len(DEMO_TASKS)
    logs = sorted(log_dir.glob("*.eval"))
    assert len(logs) == len(DEMO_TASKS)
    for path in logs:
        log = read_eval_log(str(path))
        assert str(path) in out
        assert log.status == "success" and log.eval.model == f"local/{model_dir}"
        assert log.eval.metadata["resolved_checkpoint"]["path"] == str(model_dir)


def test_an_existing_model_is_reused(tiny_qwen):
    before = (tiny_qwen / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_model(tiny_qwen) == tiny_qwen
    assert (tiny_qwen / "model.safetensors").stat().st_mtime_ns == before


def test_roles_that_never_ran_and_tools_never_called_are_named():
    metrics = {
        "input_tokens_solver": 40.0,
        "input_tokens_verifier": 0.0,
        "tool_calls_search": 0.0,
        "tool_calls_browse": 2.0,
        "input_tokens": 40.0,
    }
    assert idle_parts(metrics) == ["role verifier never ran", "tool search was never called"]
