"""The names a recipe picks its parts by -- ``algorithm.method``, ``algorithm.advantage``,
``algorithm.policy_loss`` -- and where each part lives, readable without importing the parts (torch): loading
a recipe checks its names here (an unknown one is one line listing the known names), the trainer imports a
part when it runs. Adding a method, an estimator or a loss is writing it and adding its line here; a plug-in
may add its own entry at run time."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from mara_bench.core import named


@dataclass(frozen=True)
class Named:
    """A registered part: ``module:attribute`` (imported on first use) or the part itself."""

    target: str | Any
    needs_critic: bool = False
    """For an advantage estimator: the run loads a critic for it (its values are the estimator's input)."""

    def load(self) -> Any:
        if not isinstance(self.target, str):
            return self.target
        module, attribute = self.target.split(":")
        return getattr(import_module(module), attribute)


METHODS: dict[str, Named] = {
    "grpo": Named("mara_bench.trainer.methods.grpo:METHOD"),
    "marsrl": Named("mara_bench.trainer.methods.marsrl:METHOD"),
    "mars": Named("mara_bench.trainer.methods.mars:METHOD"),
    "matpo": Named("mara_bench.trainer.methods.matpo:METHOD"),
    "mask": Named("mara_bench.trainer.methods.mask:METHOD"),
}
"""The training methods (``mara_bench.trainer.methods``)."""

ADVANTAGE_ESTIMATORS: dict[str, Named] = {
    "grpo": Named("mara_bench.trainer.algorithms.estimators:grpo_advantages"),
    "gae": Named("mara_bench.trainer.algorithms.estimators:gae_advantages", needs_critic=True),
}
"""The advantage estimators (``mara_bench.trainer.algorithms.estimators``)."""

POLICY_LOSSES: dict[str, Named] = {"ppo": Named("mara_bench.trainer.algorithms.losses:policy_loss")}
"""``ppo``: the clipped surrogate with clip-higher and dual clip (every paper's loss here: MarsRL, MARS, MATPO
and M-ASK all train with it); its aggregation is ``algorithm.loss_mode`` (``mara_bench.trainer.algorithms.losses``)."""

DEMO_SKILLS: dict[str, Named] = {
    system: Named(f"mara_bench.trainer.demos.{system}:SKILLS") for system in ("vc", "mars", "matpo", "mask")
}
"""The systems with a demonstration policy for the cold start (``mara_bench.trainer.demos.POLICIES``), each with
its roles' default skills: what a recipe's ``warmup`` is checked against."""

WORKED_DEMOS = frozenset({"vc"})
"""The systems whose demonstration policy has a worked form (``DemoPolicy.worked``, ``warmup.demo_work``)."""


def entry(registry: dict[str, Named], name: str, kind: str) -> Named:
    """``registry[name]``; an unknown name raises ``mara_bench.core.named``'s ValueError naming ``kind`` and the known
    names."""
    return named.lookup(registry, name, kind)
