"""``mara demo``: builds the tiny model when absent and evaluates it offline on the bundled samples."""

from __future__ import annotations

from inspect_ai.log import read_eval_log

from harness.demo import ensure_tiny_model, main


def test_demo_builds_the_model_evaluates_both_benchmarks_and_prints_scores(tmp_path, capsys):
    model_dir, log_dir = tmp_path / "tiny", tmp_path / "logs"
    assert main(["--model-dir", str(model_dir), "--log-dir", str(log_dir), "--max-tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "building the tiny model" in out
    assert "aime2025 [math] accuracy=0.000" in out
    assert "bamboogle [lexical] em=0.000" in out
    logs = sorted(log_dir.glob("*.eval"))
    assert len(logs) == 2
    for path in logs:
        log = read_eval_log(str(path))
        assert str(path) in out
        assert (log.status, log.eval.model, len(log.samples)) == ("success", f"local/{model_dir}", 5)
        usage = log.stats.model_usage[f"local/{model_dir}"]
        assert 5 <= usage.output_tokens <= 5 * 16  # every sample answered, within the demo's token cap


def test_an_existing_model_is_reused(tiny_qwen):
    before = (tiny_qwen / "model.safetensors").stat().st_mtime_ns
    assert ensure_tiny_model(tiny_qwen) == tiny_qwen
    assert (tiny_qwen / "model.safetensors").stat().st_mtime_ns == before
