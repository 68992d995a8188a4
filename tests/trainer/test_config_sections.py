"""The whole recipe stays on the trainer's top floor: below ``trainer/run/`` every part receives the sections of the
recipe it reads (``model``, ``optim``, ``rollout``, ``algorithm`` ...), never ``TrainConfig`` itself."""

from __future__ import annotations

from pathlib import Path

TRAINER = Path(__file__).resolve().parents[2] / "trainer"
ALLOWED = {TRAINER / "config.py"}
"""The recipe's own definition; ``trainer/run/`` (which slices it) is allowed as a folder."""


def modules_naming_the_whole_recipe(root: Path) -> list[str]:
    """The trainer's modules below ``run/`` whose code names ``TrainConfig``."""
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path not in ALLOWED and "run" not in path.relative_to(root).parts[:1]
        if "TrainConfig" in path.read_text()
    )


def test_only_the_run_floor_takes_the_whole_recipe():
    assert modules_naming_the_whole_recipe(TRAINER) == []


def test_the_check_finds_a_module_that_takes_the_whole_recipe(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "learner").mkdir()
    (tmp_path / "run" / "engine.py").write_text("def build(config: TrainConfig): ...\n")
    (tmp_path / "learner" / "update.py").write_text("def update(config: TrainConfig): ...\n")
    (tmp_path / "learner" / "models.py").write_text("def load(model: ModelConfig): ...\n")
    assert modules_naming_the_whole_recipe(tmp_path) == ["learner/update.py"]
