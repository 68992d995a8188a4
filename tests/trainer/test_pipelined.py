"""MarsRL's pipelined and segmented rollouts in the real trainer (``mara_bench.trainer.rollouts.pipelined``): the
staleness bound holds, an agent's samples train while later agents of its chains still decode, importance
ratios use the sampler's own logprobs, and a ``mara train`` run of a pipelined recipe reports the staleness
and waiting metrics."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from test_train_run_metrics import mara_train

from mara_bench.trainer.config import ConfigError, MarsRLConfig, TrainConfig, from_dict, load_config, to_dict
from mara_bench.trainer.rollouts import pipeline_units, pipelined
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.metrics import read_metrics

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "trainer" / "recipes" / "marsrl-tiny.yaml"
STREAM_KEYS = (
    "staleness_mean",
    "staleness_max",
    "samples",
    "samples_per_s",
    "time_wait_learner",
    "time_wait_sampler",
    "samples/solver",
    "samples/verifier",
    "samples/corrector",
)


@pytest.fixture(scope="module")
def warm_model(tmp_path_factory) -> str:
    """The marsrl-tiny model after a short cold start (its chains reach the Verifier and the Corrector)."""
    config = load_config(RECIPE)
    config.warmup.steps = 12
    out = tmp_path_factory.mktemp("warm")
    trainer = Trainer(config, out)
    trainer.warm_up()
    trainer.policy.save_pretrained(out / "warm")
    trainer.tokenizer.save_pretrained(out / "warm")
    return str(out / "warm")


def pipelined_trainer(warm_model: str, run_dir: Path, *, staleness: int, pipeline: bool = True, segment=None):
    config = load_config(RECIPE)
    config.model.path = warm_model
    config.warmup.steps = 0
    config.algorithm.marsrl.pipeline = pipeline
    config.algorithm.marsrl.max_staleness = staleness
    config.rollout.segment_tokens = segment
    return Trainer(config, run_dir)


def run_steps(trainer: Trainer, steps: int) -> list[dict[str, float]]:
    records = []
    for _ in range(steps):
        metrics = trainer.train_step()
        version = trainer.step - 1
        seen = [version - s.policy_version for s in trainer.last_samples]
        assert max(seen, default=0) == metrics["staleness_max"]
        records.append(metrics)
    trainer.source.close()
    return records


@pytest.mark.parametrize("staleness", [0, 1])
def test_no_sample_trains_staler_than_the_bound(warm_model, tmp_path, staleness):
    trainer = pipelined_trainer(warm_model, tmp_path, staleness=staleness)
    records = run_steps(trainer, 3)
    assert all(set(STREAM_KEYS) <= set(record) for record in records)
    assert max(record["staleness_max"] for record in records) <= staleness
    assert sum(record["samples"] for record in records) > 0
    if staleness == 0:  # the sampler's weights are the learner's: its behaviour logprobs give ratios of 1
        assert all(record["approx_kl"] < 1e-6 and record["clip_fraction"] == 0 for record in records)


def test_solver_samples_train_while_their_chains_correctors_are_still_to_come(
    warm_model, tmp_path, monkeypatch
):
    first_step = threading.Event()
    forward = pipelined._ChainTap.__call__

    async def correctors_wait_for_the_first_step(self, role, messages, **sampling):
        if (
            role == "corrector"
        ):  # hold every Corrector back until the learner has taken a step (at most 120 s)
            for _ in range(12_000):
                if first_step.is_set():
                    break
                await asyncio.sleep(0.01)
        return await forward(self, role, messages, **sampling)

    monkeypatch.setattr(pipelined._ChainTap, "__call__", correctors_wait_for_the_first_step)
    trainer = pipelined_trainer(warm_model, tmp_path, staleness=1)
    first = trainer.train_step()
    trained_first = {
        e.origin for e in list(trainer.source.events) if e.kind == "trained" and e.role == "solver"
    }
    first_step.set()
    run_steps(trainer, 2)
    assert first["samples/solver"] > 0 and first["samples/corrector"] == 0
    events = list(trainer.source.events)
    order = {(e.kind, e.origin): index for index, e in enumerate(events)}
    # Chains whose Solver rows trained in the first step, while every Corrector was still held back. (A Solver
    # group released later may train after its Correctors answer: that ordering is timing, not a property.)
    early = [
        corrector
        for corrector in (e.origin for e in events if e.kind == "answered" and e.role == "corrector")
        if pipeline_units.Origin(corrector.question, corrector.chain, 0) in trained_first
    ]
    assert early, "no chain whose Solver trained in the first step reached its Corrector"
    for corrector in early:
        solver = pipeline_units.Origin(corrector.question, corrector.chain, 0)
        assert order["trained", solver] < order["answered", corrector]


def test_without_pipeline_a_question_trains_only_once_its_chains_end(warm_model, tmp_path):
    trainer = pipelined_trainer(warm_model, tmp_path, staleness=1, pipeline=False, segment=12)
    records = run_steps(trainer, 2)
    assert max(record["staleness_max"] for record in records) <= 1
    assert len(trainer.source.chat.segments) > 0
    events = list(trainer.source.events)
    for index, event in enumerate(events):
        if event.kind == "trained":
            later = [
                e
                for e in events[index:]
                if e.kind == "answered" and e.origin.question == event.origin.question
            ]
            assert not later, f"{event} trained before its question's chains ended"


def test_grouped_rollouts_with_pipeline_and_segments_train_three_steps(warm_model, tmp_path):
    """The paper's combination: grouped agentic rollouts, agent-level pipeline and segment rollouts together."""
    config = load_config(RECIPE)
    config.model.path, config.warmup.steps = warm_model, 0
    config.task.system_options = {}  # a grouped tree takes none of the V-C loop's options
    config.algorithm.marsrl = MarsRLConfig(rollout="grouped", agents=5, pipeline=True, max_staleness=1)
    config.rollout.segment_tokens = 8
    trainer = Trainer(config, tmp_path)
    trained: list = []
    records = []
    for _ in range(3):
        records.append(trainer.train_step())
        trained += trainer.last_samples
    trainer.source.close()
    assert [record["skipped"] for record in records] == [0.0, 0.0, 0.0]
    assert max(record["staleness_max"] for record in records) <= 1
    assert trainer.source.chat.segments  # decoded in rounds of 8 tokens
    events = list(trainer.source.events)
    assert {e.role for e in events if e.kind == "trained"} >= {"solver", "verifier"}
    # one tree per question: its later agents' groups share one input each (<question>/<agent>/<input call>)
    verifier_keys = {s.group_key for s in trained if s.role == "verifier"}
    assert verifier_keys and all(key.count("/") == 2 for key in verifier_keys)
    for role in ("solver", "verifier"):
        rows = [s for s in trained if s.role == role]
        assert {s.reward for s in rows} <= {-1.0, 1.0}
        groups: dict[str, list] = {}
        for s in rows:
            groups.setdefault(s.group_key, []).append(s)
        for group in groups.values():  # GRPO: non-zero advantages exactly where a group's rewards differ
            mixed = len({s.reward for s in group}) > 1
            assert any(s.advantage != 0.0 for s in group) == mixed, (role, [s.reward for s in group])
    assert any(s.advantage != 0.0 for s in trained)


def test_streaming_options_need_marsrl_and_no_context_budget():
    data = to_dict(load_config(RECIPE))
    segments = {**data["rollout"], "segment_tokens": 8}
    budget = {**segments, "max_context_tokens": 64}
    with pytest.raises(
        ConfigError, match=r"rollout.max_context_tokens: is not applied under rollout.segment"
    ):
        from_dict(TrainConfig, {**data, "rollout": budget}, "recipe.yaml")
    grpo = {**data["algorithm"], "method": "grpo"}
    with pytest.raises(
        ConfigError, match=r"^recipe.yaml: rollout.segment_tokens: needs algorithm.method marsrl"
    ):
        from_dict(TrainConfig, {**data, "algorithm": grpo, "rollout": segments}, "recipe.yaml")


def test_mara_train_runs_a_pipelined_recipe_and_reports_staleness(tmp_path):
    recipe = tmp_path / "marsrl-pipelined.yaml"
    text = RECIPE.read_text().replace(
        "  kl_coef: 0.0\n", "  kl_coef: 0.0\n  marsrl: {pipeline: true, max_staleness: 1}\n"
    )
    recipe.write_text(text.replace("  steps: 40\n", "  steps: 12\n").replace("steps: 3\n", "steps: 2\n"))
    assert "pipeline: true" in recipe.read_text()
    mara_train(recipe, tmp_path / "run")
    records = read_metrics(tmp_path / "run")
    assert len(records) == 2
    for record in records:
        assert set(STREAM_KEYS) <= set(record)
        assert record["staleness_max"] <= 1
    assert (tmp_path / "run" / "exports" / "step_2" / "config.json").exists()
