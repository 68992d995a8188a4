"""The names a recipe picks its parts by -- ``algorithm.method``, ``algorithm.advantage``,
``algorithm.policy_loss`` -- and the systems with a demonstration policy (``warmup``), each with where it lives,
readable without importing the parts (torch): the registry style of ``mara_bench.core.named``, whose ``lookup``
finds them (an unknown name is one line listing the known names). Loading a recipe checks its names here, the
trainer imports a part when it runs. Adding a method, an estimator, a loss or a demonstration policy is writing it
and adding its line here; a plug-in may add its own entry at run time."""

from __future__ import annotations

from dataclasses import dataclass

from mara_bench.core.named import Named


@dataclass(frozen=True)
class NamedEstimator(Named):
    """An advantage estimator by reference, with what the run must load for it."""

    needs_critic: bool = False
    """The run loads a critic for it (its values are the estimator's input)."""


METHODS: dict[str, Named] = {
    "grpo": Named("mara_bench.trainer.methods.grpo:METHOD"),
    "marsrl": Named("mara_bench.trainer.methods.marsrl:METHOD"),
    "mars": Named("mara_bench.trainer.methods.mars:METHOD"),
    "matpo": Named("mara_bench.trainer.methods.matpo:METHOD"),
    "mask": Named("mara_bench.trainer.methods.mask:METHOD"),
}
"""The training methods (``mara_bench.trainer.methods``)."""

ADVANTAGE_ESTIMATORS: dict[str, NamedEstimator] = {
    "grpo": NamedEstimator("mara_bench.trainer.algorithms.estimators:grpo_advantages"),
    "gae": NamedEstimator("mara_bench.trainer.algorithms.estimators:gae_advantages", needs_critic=True),
}
"""The advantage estimators (``mara_bench.trainer.algorithms.estimators``)."""

POLICY_LOSSES: dict[str, Named] = {"ppo": Named("mara_bench.trainer.algorithms.losses:policy_loss")}
"""``ppo``: the clipped surrogate with clip-higher and dual clip (every paper's loss here: MarsRL, MARS, MATPO
and M-ASK all train with it); its aggregation is ``algorithm.loss_mode`` (``mara_bench.trainer.algorithms.losses``)."""

DEMO_POLICIES: dict[str, Named] = {
    "vc": Named("mara_bench.trainer.demos:VC"),
    "mars": Named("mara_bench.trainer.demos:MARS"),
    "matpo": Named("mara_bench.trainer.demos:MATPO"),
    "mask": Named("mara_bench.trainer.demos:MASK"),
}
"""The systems with a demonstration policy for the cold start (``mara_bench.trainer.demos.DemoPolicy``: its
replies, its roles' default skills and, for some, a worked form): what a recipe's ``warmup`` is checked against."""
