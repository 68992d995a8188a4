"""One installable package, ``mara_bench``: pyproject maps every package folder of the checkout into it, a built
wheel holds nothing else at the top level, and installed from that wheel into a fresh environment the tasks
register as ``mara_bench/<task>`` (what Inspect names a task depends on where the package is installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from import_graph import FOLDERS, ROOT

SOURCES = ("pyproject.toml", "README.md", *FOLDERS)


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _package_folders() -> dict[str, str]:
    """Package name -> checkout folder, for every folder of the package tree that holds an ``__init__.py`` or a
    file that pyproject's ``package-data`` ships (a data folder: prompts, bundled samples, recipes ...)."""
    suffixes = tuple(pattern.removeprefix("**/*") for pattern in _setuptools()["package-data"]["*"])
    found = {}
    for folder, package in FOLDERS.items():
        for file in (ROOT / folder).rglob("*"):
            if "__pycache__" in file.parts or not (
                file.name == "__init__.py" or file.name.endswith(suffixes)
            ):
                continue
            relative = file.parent.relative_to(ROOT / folder)
            found[".".join((package, *relative.parts))] = file.parent.relative_to(ROOT).as_posix()
    return found


def test_pyproject_maps_every_package_folder_into_mara_bench():
    setuptools = _setuptools()
    assert sorted(setuptools["packages"]) == sorted(_package_folders())
    assert setuptools["package-dir"] == {package: folder for folder, package in FOLDERS.items()}


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built from a copy of the checkout's sources (so the build writes nothing into the checkout), and
    what the build printed."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(
            ROOT / name,
            source / name,
            **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}),
        )
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(out),
        ".",
    ]
    done = subprocess.run(build, cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert not list(source.glob("*.egg-info")), (
        "the build left its metadata in the root, on `python -m`'s path"
    )
    return next(out.glob("*.whl")), done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(build) -> Path:
    return build[0]


@pytest.mark.slow
def test_the_build_packs_every_data_folder_without_a_warning(build):
    """setuptools warns of each data folder missing from ``packages`` ("Package ... is absent from the
    `packages` configuration", "would be ignored"); listed, it ships their files in silence."""
    _, printed = build
    assert "absent from the `packages` configuration" not in printed
    assert "would be ignored" not in printed


@pytest.mark.slow
def test_the_wheel_holds_only_mara_bench_at_the_top_level(wheel):
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        entry_points = archive.read(next(n for n in archive.namelist() if n.endswith("entry_points.txt")))
    assert tops == {"mara_bench", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "mara_bench = mara_bench.harness._registry" in entry_points.decode()


@pytest.mark.slow
def test_installed_from_the_wheel_the_tasks_register_under_mara_bench(wheel, tmp_path):
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=False)
    python = environment / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies (and pip) from this environment's package folders, after the fresh one's own
    Path(site, "dependencies.pth").write_text(
        "".join(f"{p}\n" for p in sys.path if p.endswith("site-packages"))
    )
    install = [python, "-m", "pip", "install", "--no-deps", "-q", str(wheel)]
    subprocess.run(install, capture_output=True, text=True, check=True, timeout=300)
    check = (
        "import mara_bench.harness, mara_bench.aime as aime\n"
        "from mara_bench.core.inspect_compat import registry_info\n"
        "print(mara_bench.harness.__file__)\n"
        "print(registry_info(aime.aime2025).name)\n"
    )
    done = subprocess.run([python, "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    location, name = done.stdout.split()
    assert Path(location).is_relative_to(site)
    assert name == "mara_bench/aime2025"
