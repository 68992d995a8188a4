"""The training methods, by name (``algorithm.method`` in a recipe, ``mara_bench.trainer.registry.METHODS``): how
episodes become rewarded samples and which advantages they get.

* ``grpo`` -- plain GRPO on the episode's outcome reward (any system);
* ``marsrl`` -- MarsRL's agent-specific rewards for the V-C system, over ordinary or grouped agentic rollouts
  (``marsrl.py``, ``marsrl_rollout.py``);
* ``mars`` -- MARS's shared trajectory reward, per-system advantages and balanced System-1 sampling (``mars.py``);
* ``matpo`` -- MATPO's reward manager's 0.9·acc + 0.5·(0.1·fmt_planner + mean 0.1·fmt_worker), planner advantages broadcast to workers (``matpo.py``);
* ``mask`` -- M-ASK's turn-level F1 rewards for PPO with a shared critic (``mask.py``).
"""

from __future__ import annotations

from mara_bench.core.named import lookup
from mara_bench.trainer import registry
from mara_bench.trainer.algorithms.advantages import GroupNorm, group_advantages
from mara_bench.trainer.methods.base import Method, concatenate


def get_method(name: str) -> Method:
    """The method registered as ``name`` (``mara_bench.trainer.registry.METHODS``); an unknown name raises a ValueError
    listing the known ones."""
    return lookup(registry.METHODS, name, "algorithm.method").load()


__all__ = ["GroupNorm", "Method", "concatenate", "get_method", "group_advantages"]
