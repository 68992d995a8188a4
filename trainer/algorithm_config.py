"""The ``algorithm:`` section of a training recipe (``mara_bench.trainer.config``): the method, its advantages and loss,
and the method sections MarsRL and M-ASK read. Method, estimator and loss names are checked against
``mara_bench.trainer.registry`` without importing them."""

from __future__ import annotations

import typing
from typing import Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mara_bench.core.named import lookup
from mara_bench.core.typed_config import ConfigProblem, config_dataclass, did_you_mean
from mara_bench.trainer import registry

MarsRLRollout = Literal["chains", "grouped"]
MarsRLSelection = Literal["random", "balanced", "adaptive"]
MarsRLAgent = Literal["solver", "verifier", "corrector"]
MaskReward = Literal["turn", "trajectory"]
LossMode = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
KlKind = Literal["k1", "abs", "k2", "k3", "k1+", "k3+"]

MARSRL_ROLLOUTS = typing.get_args(MarsRLRollout)
MARSRL_SELECTIONS = typing.get_args(MarsRLSelection)


@config_dataclass
class MarsRLConfig:
    """How ``method: marsrl`` rolls out (arXiv:2511.11373 §3.3-3.4); ``trainer/methods/marsrl_rollout.py`` has
    the rules."""

    rollout: MarsRLRollout = "chains"
    """``chains``: ``rollout.group_size`` ordinary V-C runs per question (``task.system_options`` apply);
    ``grouped``: the paper's grouped agentic rollouts -- ``group_size`` Solver samples, then each later agent
    samples ``group_size`` outputs on each of 2 chosen outputs of the agent before it."""
    selection: MarsRLSelection = "adaptive"
    """How ``grouped`` chooses those 2 outputs: ``random`` (uniformly), ``balanced`` (one right and one wrong
    where there are both) or ``adaptive`` (the paper's best: the Verifier prefers wrong solutions, the
    Corrector prefers reports that rightly flagged an error)."""
    agents: StrictInt = Field(default=5, ge=2, le=5)
    """Agents in a ``grouped`` rollout, 2 to 5: Solver, Verifier1, Corrector1, Verifier2, Corrector2 (the
    paper's five; 3 stops after Corrector1)."""
    train_agents: list[MarsRLAgent] | None = None
    """The agents whose samples are trained (Table 2): ``[solver]`` is MarsRL-S, ``[verifier, corrector]``
    MarsRL-VC; null trains all three. Every agent still rolls out and is rewarded (and shows in the
    metrics)."""
    pipeline: StrictBool = False
    """Agentic pipeline parallelism (§3.3; either rollout, with segment rollouts or without): a rollout thread
    decodes with a snapshot of the policy while the learner trains, and each (question, agent) group enters
    training as soon as every chain of the question is past that agent (``mara_bench.trainer.rollouts.pipelined``);
    false: a question's samples enter training together."""
    max_staleness: StrictInt = Field(default=1, ge=0)
    """Under ``pipeline`` / segment rollouts: most learner steps between the weights that started a sample and
    the step that trains it (enforced: the learner waits for older samples, the sampler for newer weights)."""

    @model_validator(mode="after")
    def _grouped_settings_need_grouped(self) -> MarsRLConfig:
        if self.rollout == "chains":
            for name, default in (("selection", "adaptive"), ("agents", 5)):
                if getattr(self, name) != default:
                    raise ConfigProblem(
                        name, "applies to rollout 'grouped' only", "set rollout: grouped or remove it"
                    )
        return self


@config_dataclass
class MaskConfig:
    """M-ASK's reward (arXiv:2601.04703 §3.3); only ``method: mask`` reads it."""

    reward: MaskReward = "turn"
    """``turn``: the paper's turn-level rewards (plan/answer F1, search/summary/update the turn's F1 gain);
    ``trajectory``: the ablation -- every agent's call rewarded with the trajectory's final-answer F1."""
    format_penalty: StrictBool = False
    """M-ASK's released training code: a call whose reply breaks its role's strict format
    (``mara_bench.harness.systems.mask_format``) earns -1 on top of its reward, except a Search call that ends the loop with
    ``<end>``. Off (the default): the paper's rewards (eq. 2-3), which state no penalty."""


@config_dataclass
class AlgorithmConfig:
    method: StrictStr = "grpo"
    """The training method (``mara_bench.trainer.methods``): ``grpo`` (outcome reward, any system), ``marsrl`` (vc
    system), ``mars`` (mars system), ``matpo`` (matpo system) or ``mask`` (mask system, with ``advantage:
    gae``)."""
    advantage: StrictStr = "grpo"
    """The advantage estimator (``mara_bench.trainer.algorithms.estimators``): ``grpo`` (group-normalised outcome
    rewards) or ``gae`` (PPO with a critic, which is loaded only for it)."""
    policy_loss: StrictStr = "ppo"
    """The policy loss (``mara_bench.trainer.registry.POLICY_LOSSES``): ``ppo``, the clipped surrogate (``clip_low``,
    ``clip_high``, ``dual_clip``), aggregated by ``loss_mode``."""
    marsrl: MarsRLConfig = Field(default_factory=MarsRLConfig)
    """MarsRL's rollout mode and sampling strategy; only ``method: marsrl`` reads it."""
    grpo_eps: StrictFloat = Field(default=1e-6, gt=0)
    """Epsilon added to the group std."""
    grpo_unbiased_std: StrictBool = True
    """Use the n-1 standard deviation in GRPO."""
    grpo_normalize_std: StrictBool = True
    """Divide by the group std (false = Dr.GRPO)."""
    gamma: StrictFloat = Field(default=1.0, ge=0, le=1)
    """GAE discount."""
    lam: StrictFloat = Field(default=0.95, ge=0, le=1)
    """GAE lambda."""
    gae_whiten: StrictBool = True
    """Standardise the GAE advantages over every trained token of the step (verl's ``masked_whiten``, which
    M-ASK's code runs); false keeps the raw ``R - V``. On a small multi-role batch the batch mean is the
    critic's per-role error: whitening a step whose rewards are all equal still gives every row a unit-size
    advantage."""
    clip_low: StrictFloat = Field(default=0.2, ge=0, lt=1)
    """Lower PPO clip range (ratio >= 1 - clip_low)."""
    clip_high: StrictFloat = Field(default=0.2, ge=0)
    """Upper PPO clip range (ratio <= 1 + clip_high)."""
    dual_clip: StrictFloat | None = Field(default=3.0, gt=1)
    """Dual-clip bound for negative advantages (above 1); null disables it."""
    loss_mode: LossMode = "token-mean"
    """Loss aggregation: token-mean, seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm."""
    norm_length: StrictInt | None = Field(default=None, ge=1)
    """The constant length ``seq-mean-token-sum-norm`` divides each row's token sum by (Dr.GRPO); null means
    ``rollout.max_tokens``. Set it to the longest response a sample can have when episodes make several
    calls."""
    kl_coef: StrictFloat = Field(default=0.0, ge=0)
    """Weight of the KL penalty to the frozen reference model: the policy RL starts from, after the cold start
    when there is one (0 = no reference model is loaded)."""
    kl_kind: KlKind = "k3"
    """KL estimator: k1, abs, k2, k3, k1+, k3+."""
    entropy_coef: StrictFloat = Field(default=0.0, ge=0)
    """Weight of the entropy bonus."""
    ppo_epochs: StrictInt = Field(default=1, ge=1)
    """Passes over each rollout batch (verl's ``ppo_epochs``); each pass takes one optimizer step per PPO
    mini-batch."""
    ppo_mini_batch_size: StrictInt | None = Field(default=None, ge=1)
    """Questions per optimizer step, over all ranks (verl's ``ppo_mini_batch_size``;
    ``mara_bench.trainer.learner.mini_batches``): a step makes ``rollout.prompts_per_step / ppo_mini_batch_size``
    optimizer steps per epoch, and from the second on the importance ratio is no longer 1 (the old logprobs
    are recomputed once, before the first). Must divide ``prompts_per_step``; null: the whole batch, one
    optimizer step per epoch."""
    value_clip: StrictFloat = Field(default=0.2, gt=0)
    """Clip range of the critic's value update (gae only)."""
    critic_lr: StrictFloat = Field(default=1e-3, gt=0)
    """Critic learning rate (gae only)."""
    mask: MaskConfig = Field(default_factory=MaskConfig)
    """M-ASK's turn-level reward switch; only ``method: mask`` reads it."""
    filter_zero_variance: StrictBool = False
    """Drop the rows of groups whose rewards are all equal (zero group advantage) before the update; the share
    of such groups is reported every step either way (``groups_zero_variance_frac``)."""
    mpt_target_entropy: StrictFloat | None = Field(default=None, gt=0)
    """MarsRL/UloRL dynamic masking (``mara_bench.trainer.algorithms.mastered_tokens``): while the previous update's
    policy entropy is below this target, well-mastered positive tokens leave the loss mask; null = off."""
    mpt_probability: StrictFloat = Field(default=0.99, gt=0, le=1)
    """A positive sample's token is well mastered when the policy gives it at least this probability (UloRL:
    0.99)."""

    @field_validator("method")
    @classmethod
    def _a_registered_method(cls, name: str) -> str:  # the names only: nothing is imported
        if name not in registry.METHODS:
            raise ConfigProblem(
                "",
                f"{name!r} is not a valid choice; {did_you_mean(name, registry.METHODS)}"
                f"choose one of {', '.join(registry.METHODS)}",
            )
        return name

    @field_validator("advantage", "policy_loss")
    @classmethod
    def _registered(cls, name: str, field: ValidationInfo) -> str:  # the names only: nothing is imported
        table, kind = {
            "advantage": (registry.ADVANTAGE_ESTIMATORS, "advantage estimator"),
            "policy_loss": (registry.POLICY_LOSSES, "policy loss"),
        }[field.field_name]
        lookup(table, name, kind)
        return name

    @model_validator(mode="after")
    def _whitening_is_gae_s(self) -> AlgorithmConfig:
        if not self.gae_whiten and self.advantage != "gae":
            raise ConfigProblem(
                "gae_whiten", f"applies to advantage 'gae' only, and it is {self.advantage!r}", "remove it"
            )
        return self

    @model_validator(mode="after")
    def _method_sections_need_their_method(self) -> AlgorithmConfig:
        for name, default in (("marsrl", MarsRLConfig()), ("mask", MaskConfig())):
            if self.method != name and getattr(self, name) != default:
                raise ConfigProblem(
                    name, f"applies to method {name!r} only, and method is {self.method!r}", "remove it"
                )
        return self
