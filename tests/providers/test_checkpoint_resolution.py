"""Resolving ``local/<x>``: model dirs, trainer runs, LoRA adapters, the HF cache, the registry, and clear errors."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
import torch
from _lora_helpers import save_lora_adapter
from peft import PeftModel

from mara_bench.harness import invocation
from mara_bench.harness.checkpoints import RegistryError, load_registry
from mara_bench.harness.providers.loading import check_before_loading, load_checkpoint
from mara_bench.harness.providers.provenance import checkpoint_record
from mara_bench.harness.providers.resolve import CheckpointError, latest_export, resolve_checkpoint


@pytest.fixture(autouse=True)
def _no_registry(monkeypatch, tmp_path):
    """Each test starts without a registry: no MARA_CHECKPOINTS and a working directory without checkpoints.yaml
    (the directory the command ran in, ``mara_bench.harness.invocation``, is the test's working directory)."""
    monkeypatch.delenv("MARA_CHECKPOINTS", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(invocation, "INVOCATION_DIR", tmp_path)


@pytest.fixture(scope="module")
def adapter(tiny_qwen, tmp_path_factory) -> Path:
    return save_lora_adapter(tiny_qwen, tmp_path_factory.mktemp("lora"))


def copy_model(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def test_a_model_directory_resolves_to_itself(tiny_qwen):
    resolved = resolve_checkpoint(str(tiny_qwen))
    assert (resolved.model, resolved.tokenizer, resolved.adapter, resolved.source) == (
        str(tiny_qwen),
        str(tiny_qwen),
        None,
        "model",
    )


def test_a_run_directory_resolves_to_its_highest_export_step(tiny_qwen, tmp_path):
    run = tmp_path / "run"
    for step in (2, 10, 9):  # 10 > 9 > 2 numerically, though "step_9" > "step_10" as text
        copy_model(tiny_qwen, run / "exports" / f"step_{step}")
    (run / "step_50").mkdir()  # a training-state checkpoint, not an export: exports/ wins
    resolved = resolve_checkpoint(str(run))
    assert resolved.model == str(run / "exports" / "step_10")
    assert resolved.source == "run"


def test_a_run_directory_with_plain_step_dirs_and_an_explicit_step(tiny_qwen, tmp_path):
    run = tmp_path / "run"
    copy_model(tiny_qwen, run / "step_3")
    copy_model(tiny_qwen, run / "step_7")
    assert resolve_checkpoint(str(run)).model == str(run / "step_7")
    assert resolve_checkpoint(str(run / "step_3")).model == str(run / "step_3")
    assert latest_export(tmp_path) is None


@pytest.fixture(scope="module")
def trained_run(tiny_qwen, tmp_path_factory) -> Path:
    """A real ``mara train`` run directory: 2 GRPO steps on the tiny model, exported at steps 1 and 2."""
    from mara_bench.trainer.run.cli import main as train_main

    home = tmp_path_factory.mktemp("train")
    recipe = home / "recipe.yaml"
    recipe.write_text(
        f"model: {{path: {tiny_qwen}}}\ntask: {{args: {{n_prompts: 8}}}}\n"
        "rollout: {prompts_per_step: 4, group_size: 8, max_tokens: 8}\nsteps: 2\nsave_every: 1\n"
        # weight decay moves the weights even when every sampled reply of the untrained model scores 0
        "optim: {weight_decay: 0.1}\n"
    )
    assert train_main([str(recipe), "--out", str(home / "run")]) == 0
    return home / "run"


def test_a_real_trainer_run_directory_loads_its_latest_export(trained_run, tiny_qwen):
    from transformers import AutoModelForCausalLM

    assert (trained_run / "config.json").is_file()  # the run's own training config, not an HF model config
    resolved = resolve_checkpoint(str(trained_run))
    assert (resolved.model, resolved.tokenizer, resolved.source) == (
        str(trained_run / "exports" / "step_2"),
        str(trained_run / "exports" / "step_2"),
        "run",
    )
    # <run>/step_N is the README's shorthand for the export <run>/exports/step_N
    assert resolve_checkpoint(str(trained_run / "step_1")).model == str(trained_run / "exports" / "step_1")
    loaded = load_checkpoint(resolved, device="cpu").model.state_dict()
    exported = AutoModelForCausalLM.from_pretrained(trained_run / "exports" / "step_2").state_dict()
    base = AutoModelForCausalLM.from_pretrained(tiny_qwen).state_dict()
    assert all(torch.equal(loaded[name], tensor) for name, tensor in exported.items())
    assert any(not torch.equal(loaded[name], tensor) for name, tensor in base.items())  # trained weights


def test_an_adapter_resolves_onto_its_base(tiny_qwen, adapter):
    resolved = resolve_checkpoint(str(adapter))
    assert (resolved.model, resolved.adapter, resolved.tokenizer, resolved.source) == (
        str(tiny_qwen),
        str(adapter),
        str(tiny_qwen),
        "adapter",
    )


def test_lora_applied_and_merged_give_the_same_logits(tiny_qwen, adapter):
    resolved = resolve_checkpoint(str(adapter))
    merged = load_checkpoint(resolved, merge=True, device="cpu")
    applied = load_checkpoint(resolved, merge=False, device="cpu")
    plain = load_checkpoint(resolve_checkpoint(str(tiny_qwen)), device="cpu")
    ids = torch.tensor([merged.tokenizer("The answer is 42.")["input_ids"]])
    with torch.no_grad():
        merged_logits, applied_logits = merged.model(ids).logits, applied.model(ids).logits
        base_logits = plain.model(ids).logits
    assert isinstance(applied.model, PeftModel)
    assert not isinstance(merged.model, PeftModel)
    torch.testing.assert_close(merged_logits, applied_logits, atol=1e-5, rtol=1e-4)
    assert (merged_logits - base_logits).abs().max() > 1e-3  # the adapter really changes the model


def test_an_adapter_without_a_recorded_base_takes_one_from_the_option_or_the_registry(
    tiny_qwen, adapter, tmp_path, monkeypatch
):
    orphan = shutil.copytree(adapter, tmp_path / "orphan")
    config = json.loads((orphan / "adapter_config.json").read_text())
    (orphan / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": None}))
    with pytest.raises(CheckpointError, match="orphan names no base model: pass -M base=MODEL"):
        resolve_checkpoint(str(orphan))
    assert resolve_checkpoint(str(orphan), base=str(tiny_qwen)).model == str(tiny_qwen)
    registry = write_registry(tmp_path / "reg.yaml", f"orphan:\n  adapter: {orphan}\n  base: {tiny_qwen}\n")
    monkeypatch.setenv("MARA_CHECKPOINTS", str(registry))
    assert (resolve_checkpoint("orphan").model, resolve_checkpoint("orphan").adapter) == (
        str(tiny_qwen),
        str(orphan),
    )
    with pytest.raises(
        CheckpointError, match="the base .*lora.* of LoRA adapter .*orphan is itself an adapter"
    ):
        resolve_checkpoint(str(orphan), base=str(adapter))


def test_an_incompatible_adapter_is_a_clear_error(tiny_qwen, tmp_path):
    wrong = save_lora_adapter(tiny_qwen, tmp_path / "wrong", hidden_size=64)
    with pytest.raises(CheckpointError, match=r"LoRA adapter .*wrong does not fit base model .*tiny-qwen2"):
        load_checkpoint(resolve_checkpoint(str(wrong)), device="cpu")


def test_an_hf_id_comes_from_the_local_cache_only(tiny_qwen, tmp_path, monkeypatch):
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    snapshot = cache / "models--tiny-org--tiny-qwen" / "snapshots" / ("a" * 40)
    copy_model(tiny_qwen, snapshot)
    (cache / "models--tiny-org--tiny-qwen" / "refs").mkdir()
    (cache / "models--tiny-org--tiny-qwen" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    resolved = resolve_checkpoint("tiny-org/tiny-qwen")
    assert (Path(resolved.model), resolved.source) == (snapshot.resolve(), "hf-cache")
    with pytest.raises(CheckpointError, match="not in the local Hugging Face cache.*-M allow_download=true"):
        resolve_checkpoint("tiny-org/not-cached")
    with pytest.raises(CheckpointError, match="neither a directory nor a valid Hugging Face model id"):
        resolve_checkpoint("bad name!!")


def write_registry(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_registry_names_resolve_relative_to_the_registry_file(tiny_qwen, adapter, tmp_path, monkeypatch):
    home = tmp_path / "suite"
    copy_model(tiny_qwen, home / "runs" / "vc" / "exports" / "step_4")
    (home / "qwen.jinja").write_text("{{ messages[0].content }}")
    registry = write_registry(
        home / "my-checkpoints.yaml",
        f"marsrl-vc:\n  path: runs/vc\n  notes: V-C, 4 steps\n"
        f"lora:\n  adapter: {adapter}\n  merge: false\n  chat_template: qwen.jinja\n",
    )
    monkeypatch.setenv("MARA_CHECKPOINTS", str(registry))
    vc = resolve_checkpoint("marsrl-vc")
    assert (vc.model, vc.source, vc.notes) == (
        str(home / "runs/vc/exports/step_4"),
        "registry:marsrl-vc",
        "V-C, 4 steps",
    )
    lora = resolve_checkpoint("lora")
    assert (lora.adapter, lora.merge, lora.chat_template) == (str(adapter), False, str(home / "qwen.jinja"))
    assert load_checkpoint(lora, device="cpu").tokenizer.chat_template == "{{ messages[0].content }}"


def test_checkpoints_yaml_in_the_working_directory_is_the_default_registry(tiny_qwen, tmp_path):
    write_registry(tmp_path / "checkpoints.yaml", f"tiny:\n  path: {tiny_qwen}\n")
    assert resolve_checkpoint("tiny").model == str(tiny_qwen)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a:\n  path: x\n  adapter: y\n", "give exactly one of 'path'"),
        ("a:\n  pth: x\n", r"unknown field\(s\) pth; known fields: path, adapter"),
        ("a:\n  path: x\n  merge: maybe\n", "'merge' must be true or false"),
        ("a:\n  path: x\n  base: y\n", "'base' only applies with 'adapter'"),
        ("- a\n- b\n", "expected a mapping of checkpoint name"),
        ("a: [1\n", "not valid YAML"),
    ],
)
def test_malformed_registries_name_the_file_entry_and_fix(tmp_path, text, message):
    registry = write_registry(tmp_path / "reg.yaml", text)
    with pytest.raises(RegistryError, match=message):
        load_registry(registry)


def test_a_missing_registry_file_named_by_the_environment_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MARA_CHECKPOINTS", str(tmp_path / "nope.yaml"))
    with pytest.raises(RegistryError, match="MARA_CHECKPOINTS=.*nope.yaml is not a file"):
        resolve_checkpoint("anything")


def test_bad_locations_are_clear_errors(tiny_qwen, tmp_path):
    with pytest.raises(CheckpointError, match="no such directory: ./missing/model"):
        resolve_checkpoint("./missing/model")
    (tmp_path / "weights.bin").write_text("")
    with pytest.raises(CheckpointError, match="is a file"):
        resolve_checkpoint(str(tmp_path / "weights.bin"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="is not a model directory: it has no HF model config.json"):
        resolve_checkpoint(str(tmp_path / "empty"))
    (tmp_path / "empty" / "config.json").write_text('{"steps": 20}')  # e.g. a run with no export yet
    with pytest.raises(CheckpointError, match="is not a model directory: it has no HF model config.json"):
        resolve_checkpoint(str(tmp_path / "empty"))
    (tmp_path / "empty" / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="empty/config.json is not valid JSON"):
        resolve_checkpoint(str(tmp_path / "empty"))
    (tmp_path / "run" / "exports" / "step_1").mkdir(parents=True)
    with pytest.raises(CheckpointError, match="its latest export .*step_1 has no config.json"):
        resolve_checkpoint(str(tmp_path / "run"))


def test_a_model_without_tokenizer_or_chat_template_is_a_clear_error(tiny_qwen, tmp_path):
    bare = copy_model(tiny_qwen, tmp_path / "bare")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (bare / name).unlink()
    with pytest.raises(CheckpointError, match="has no tokenizer .*pass -M tokenizer=DIR"):
        resolve_checkpoint(str(bare))
    assert resolve_checkpoint(str(bare), tokenizer=str(tiny_qwen)).tokenizer == str(tiny_qwen)

    untemplated = copy_model(tiny_qwen, tmp_path / "untemplated")
    (untemplated / "chat_template.jinja").unlink()
    for check in (check_before_loading, functools.partial(load_checkpoint, device="cpu")):
        with pytest.raises(CheckpointError, match="has no chat template; pass -M chat_template=FILE"):
            check(resolve_checkpoint(str(untemplated)))
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    loaded = load_checkpoint(resolve_checkpoint(str(untemplated), chat_template=str(template)), device="cpu")
    assert loaded.tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == "hi"


def test_a_relative_name_is_taken_from_the_directory_the_command_ran_in(tiny_qwen, tmp_path, monkeypatch):
    copy_model(tiny_qwen, tmp_path / "models" / "mine")
    monkeypatch.chdir(Path(__file__).resolve().parents[2] / "tasks")  # as Inspect does for a task file
    assert resolve_checkpoint("models/mine").model == str(tmp_path / "models" / "mine")


def test_the_record_names_the_run_step_and_hashes_the_weights(tiny_qwen, tmp_path):
    copy_model(tiny_qwen, tmp_path / "run" / "exports" / "step_7")
    record = checkpoint_record("run", resolve_checkpoint("run"))
    assert (record.source, record.path, record.step, record.adapter, record.base) == (
        "run",
        str(tmp_path / "run" / "exports" / "step_7"),
        7,
        None,
        None,
    )
    same = checkpoint_record(str(tiny_qwen), resolve_checkpoint(str(tiny_qwen)))
    assert same.weights_sha256 == record.weights_sha256 and len(record.weights_sha256) == 64
    weights = tmp_path / "run" / "exports" / "step_7" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"!")
    assert checkpoint_record("run", resolve_checkpoint("run")).weights_sha256 != record.weights_sha256


def test_the_record_of_an_adapter_names_adapter_and_base(tiny_qwen, adapter):
    record = checkpoint_record("lora", resolve_checkpoint(str(adapter)))
    assert (record.path, record.adapter, record.base, record.step) == (
        str(adapter),
        str(adapter),
        str(tiny_qwen),
        None,
    )
    assert (
        record.weights_sha256 != checkpoint_record("base", resolve_checkpoint(str(tiny_qwen))).weights_sha256
    )


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_weights_name_the_weight_file(tiny_qwen, tmp_path, damage):
    copy = Path(shutil.copytree(tiny_qwen, tmp_path / "damaged"))
    weights = copy / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not weights" * 10)
    with pytest.raises(
        CheckpointError, match=rf"^{weights}: damaged or incomplete weights \(.*\); re-export"
    ):
        load_checkpoint(resolve_checkpoint(str(copy)), device="cpu")


def role_adapter_run(run: Path, adapter: Path, roles: tuple[str, ...] = ("planner", "worker")) -> Path:
    """A trainer run whose ``exports/step_2`` holds one adapter per role (copies of ``adapter``)."""
    export = run / "exports" / "step_2"
    for role in roles:
        shutil.copytree(adapter, export / "adapters" / role)
    return export


def test_a_role_adapter_of_a_run_step_export_or_registry_entry_resolves_on_its_base(
    tiny_qwen, adapter, tmp_path, monkeypatch
):
    export = role_adapter_run(tmp_path / "run", adapter)
    sources = {
        "run/adapters/worker": "run:adapters/worker",
        "run/step_2/adapters/worker": "run:adapters/worker",
        "reg/adapters/worker": "registry:reg:adapters/worker",
        f"{export}/adapters/worker": "adapter",  # the folder itself
    }
    monkeypatch.setenv("MARA_CHECKPOINTS", str(write_registry(tmp_path / "reg.yaml", "reg:\n  path: run\n")))
    for name, source in sources.items():
        resolved = resolve_checkpoint(name)
        assert resolved.adapter == str(export / "adapters" / "worker"), name
        assert resolved.model == str(tiny_qwen), name
        assert resolved.source == source, name
    record = checkpoint_record("run/adapters/worker", resolve_checkpoint("run/adapters/worker"))
    assert record.step == 2
    assert record.base == str(tiny_qwen)


def test_a_role_adapter_that_is_missing_names_the_roles_there(adapter, tmp_path):
    role_adapter_run(tmp_path / "run", adapter)
    with pytest.raises(CheckpointError, match="has no adapter for role 'judge'; its roles: planner, worker"):
        resolve_checkpoint("run/adapters/judge")
    with pytest.raises(
        CheckpointError, match=r"holds one LoRA adapter per role \(planner, worker\); name one"
    ):
        resolve_checkpoint("run")
    (tmp_path / "plain").mkdir()
    with pytest.raises(CheckpointError, match="plain is no checkpoint with per-role adapters"):
        resolve_checkpoint("plain/adapters/planner")
