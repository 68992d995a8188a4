"""Per-role LoRA adapters handed to the vLLM engine: the policy's adapters as PEFT folders in the run's scratch
dir, which the engine serves under fresh ``LoRARequest`` ids (``VLLMGenerator.load_adapters``).

Before each step's rollout, ``AdapterFolders.save`` writes every trained adapter as it now is (a frozen one only
the first time: it never changes, so it keeps its folder and request id) to ``<scratch>/<adapter>/v<N>``, under a
temporary name renamed into place when complete, and removes the version it replaces. The scratch dir is
emptied when the run (or a resumed one) starts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from mara_bench.trainer.learner.adapters import RoleAdapters, base_reference, save_adapter


class AdapterFolders:
    """The current PEFT folder of each adapter of ``plan`` under ``directory``."""

    def __init__(self, plan: RoleAdapters, directory: Path, base: Path | str):
        self.plan, self.directory, self.base = plan, Path(directory), base_reference(base)
        shutil.rmtree(self.directory, ignore_errors=True)
        self.folders: dict[str, Path] = {}
        """Adapter name -> its folder as last written."""
        self.version = 0

    def save(self, policy: Any) -> dict[str, Path]:
        """Write the adapters whose weights may have changed since the last call (every trained one; a frozen
        one the first time) and return their new folders."""
        self.version += 1
        fresh = {}
        for name in self.plan.names:
            if name in self.folders and name not in self.plan.learning_rates:
                continue
            folder = self.directory / name / f"v{self.version}"
            partial = folder.with_name(f".tmp-{folder.name}")
            shutil.rmtree(partial, ignore_errors=True)
            save_adapter(policy, name, partial, self.base)
            os.replace(partial, folder)
            if name in self.folders:
                shutil.rmtree(self.folders[name])
            self.folders[name] = fresh[name] = folder
        return fresh
