"""Per-role adapters for vLLM's multi-LoRA, without vLLM: the engine's LoRA sizing, the PEFT folders each sync
writes (trained adapters afresh, a frozen one once), and ``Rollout.sync`` handing them to the engine and checking
each adapter through it (the engine itself: tests/vllm_engines/test_vllm_role_adapters.py)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.adapter_rows import adapter_rows
from mara_bench.trainer.adapter_config import LoraConfig, RoleConfig
from mara_bench.trainer.config import RolloutConfig
from mara_bench.trainer.learner.adapters import RoleAdapters, adapter_parameters, attach
from mara_bench.trainer.rollouts import rollout as rollout_module
from mara_bench.trainer.rollouts.adapter_sync import AdapterFolders
from mara_bench.trainer.rollouts.parity import SYNC_GAP, SYNC_PROBE
from mara_bench.trainer.rollouts.rollout import Rollout, vllm_generator
from mara_bench.trainer.rollouts.vllm_rollout import EngineAdapters

ROLES = ("solver", "verifier", "corrector")


@pytest.mark.parametrize(("rank", "engine_rank"), [(1, 1), (4, 8), (8, 8), (17, 32), (512, 512)])
def test_the_engine_is_sized_for_every_adapter_at_the_smallest_rank_vllm_takes(rank, engine_rank):
    assert EngineAdapters(3, rank).engine_kwargs() == {
        "enable_lora": True,
        "max_loras": 3,
        "max_lora_rank": engine_rank,
    }
    with pytest.raises(ValueError, match="vLLM serves LoRA ranks up to 512, not 600"):
        EngineAdapters(3, 600).engine_kwargs()


def test_auto_decodes_adapters_of_a_rank_vllm_cannot_serve_with_transformers(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(rollout_module, "rollout_backend", lambda *args, **kwargs: "vllm")
    with caplog.at_level(logging.INFO, logger=rollout_module.__name__):
        engine = vllm_generator(
            RolloutConfig(), tmp_path, torch.float32, seed=0, steps=1, adapters=EngineAdapters(3, 600)
        )
    assert engine is None
    assert "vLLM serves LoRA ranks up to 512, and model.lora.r is 600" in caplog.text


@pytest.fixture
def policy(tiny_model_dir):
    """The tiny model with an adapter per role of V-C, the verifier's frozen, each adapter's ``B`` drawn."""
    from transformers import AutoModelForCausalLM

    plan = RoleAdapters.plan(ROLES, {"verifier": RoleConfig(adapter="frozen")}, 0.001)
    model = attach(AutoModelForCausalLM.from_pretrained(tiny_model_dir), LoraConfig(r=4), plan)
    for seed, name in enumerate(plan.names):
        nudge(model, name, seed)
    return model


def nudge(model, name: str, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in adapter_parameters(model, name):
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))


def test_each_sync_writes_the_trained_adapters_afresh_and_the_frozen_one_once(
    policy, tiny_model_dir, tmp_path
):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    plan = policy.role_adapters
    stale = tmp_path / "scratch" / "solver" / "v9"
    stale.mkdir(parents=True)  # a killed run's leftovers: emptied when the run starts
    folders = AdapterFolders(plan, tmp_path / "scratch", tiny_model_dir)
    assert not stale.exists()
    first = folders.save(policy)
    assert first == {name: tmp_path / "scratch" / name / "v1" for name in ROLES}
    nudge(policy, "solver", 7)
    second = folders.save(policy)
    assert second == {name: tmp_path / "scratch" / name / "v2" for name in ("solver", "corrector")}
    assert not first["solver"].exists() and first["verifier"].exists()
    assert sorted(p.name for p in (tmp_path / "scratch" / "solver").iterdir()) == ["v2"]  # no partial folder

    ids = torch.tensor([[1, 2, 3, 4, 5]])
    for name, folder in {**second, "verifier": first["verifier"]}.items():  # each folder is the adapter now
        loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), str(folder))
        with torch.no_grad(), adapter_rows(policy, [name]):
            torch.testing.assert_close(loaded(ids).logits, policy(ids).logits, atol=1e-5, rtol=0)


class PeftEngine:
    """Stands in for the vLLM engine: serves each adapter from the last folder it was given, loaded with peft."""

    def __init__(self, base):
        self.base, self.served, self.loads = base, {}, []

    def load_adapters(self, folders):
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        self.loads.append(sorted(folders))
        for name, folder in folders.items():
            self.served[name] = PeftModel.from_pretrained(
                AutoModelForCausalLM.from_pretrained(self.base), folder
            )

    def score(self, ids, adapter=None):
        with torch.no_grad():
            logits = self.served[adapter](torch.tensor([ids])).logits[0, :-1]
        return torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()


def test_a_sync_serves_the_updated_adapters_and_checks_each_through_the_engine(
    policy, tiny_model_dir, tiny_tokenizer, tmp_path
):
    engine = PeftEngine(tiny_model_dir)
    rollout = Rollout(
        task=None,
        system=None,
        system_options={},
        toolbox=None,
        chat=SimpleNamespace(tokenizer=tiny_tokenizer),
        vllm=engine,
        own_rollout=None,
        group_size=2,
        tokenizer=tiny_tokenizer,
        adapter_folders=AdapterFolders(policy.role_adapters, tmp_path / "scratch", tiny_model_dir),
    )
    assert rollout.sync(policy)[SYNC_GAP] < 1e-5
    nudge(policy, "corrector", 3)  # an update: the engine serves the old corrector until the next sync
    ids = render_prompt(tiny_tokenizer, SYNC_PROBE, add_generation_prompt=False)
    with torch.no_grad(), adapter_rows(policy, ["corrector"]):
        logits = policy(torch.tensor([ids])).logits[0, :-1]
    updated = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    assert (torch.tensor(engine.score(ids, "corrector")) - updated).abs().max() > 1e-2
    assert rollout.sync(policy)[SYNC_GAP] < 1e-5
    torch.testing.assert_close(torch.tensor(engine.score(ids, "corrector")), updated, atol=1e-5, rtol=0)
    assert engine.loads == [sorted(ROLES), ["corrector", "solver"]]  # the frozen verifier is loaded once
