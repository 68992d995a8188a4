"""The trainer's training row, ``Sample``: one token sequence the policy is trained on, what every part of the
trainer hands on (methods make them, algorithms score them, the learner packs and trains on them). How an
Episode's model calls become samples: ``mara_bench.trainer.samples``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Sample:
    """One training row."""

    prompt_ids: list[int]
    """Token ids of the rendered prompt up to the first token the model generated (never trained on)."""
    response_ids: list[int]
    """Token ids after the prompt: the model's tokens and, for multi-turn calls, the tool/user turns between them."""
    loss_mask: list[int]
    """One 0/1 per ``response_ids`` token: 1 for tokens the policy produced, 0 for tool/other-agent/template tokens."""
    old_logprobs: list[float] | None = None
    """Per ``response_ids`` token logprob under the policy that sampled it (the engine recomputes these, except
    under pipelined rollouts: there they are the sampler's own, at the training temperature)."""
    rollout_logprobs: list[float] | None = None
    """Per ``response_ids`` token, the logprob the generation engine reported for it (temperature 1), NaN where
    it reported none (tokens it did not generate): what ``mara_bench.trainer.rollouts.parity`` compares with the
    trainer's forward."""
    policy_version: int | None = None
    """Under pipelined rollouts (``mara_bench.trainer.rollouts.pipelined``): the policy version (learner steps taken) of
    the weights that started sampling this row; its staleness is the training step's version minus this."""
    role: str = "policy"
    """The agent role that made the call (``solver``, ``verifier``, ``planner``, ...)."""
    group_key: str = ""
    """Rows with the same key are normalised together by group advantages (a question id, maybe with the role)."""
    parent: int | None = None
    """Index of the sample this one hangs off (a MATPO worker's planner), for broadcast advantages."""
    reward: float = 0.0
    """The scalar reward of this row (placed on its last response token for GAE)."""
    advantage: float | list[float] | None = None
    """A scalar broadcast over the mask (GRPO), or one value per ``response_ids`` token (GAE)."""

    @property
    def input_ids(self) -> list[int]:
        return self.prompt_ids + self.response_ids

    def __post_init__(self) -> None:
        if len(self.loss_mask) != len(self.response_ids):
            raise ValueError(
                f"loss_mask has {len(self.loss_mask)} entries but response_ids has {len(self.response_ids)}"
            )
        for name in ("old_logprobs", "rollout_logprobs"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.response_ids):
                raise ValueError(
                    f"{name} has {len(values)} entries but response_ids has {len(self.response_ids)}"
                )
