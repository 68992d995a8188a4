"""The training recipe: YAML checked against typed pydantic dataclasses, every field documented and ranged.

``load_config(path)`` reads a recipe such as ``trainer/recipes/grpo-toy.yaml``. Every problem -- a YAML syntax
error, an unknown key (the closest valid name is suggested), a value of the wrong type, out of range or not one of
the choices, options that do not go together -- raises ``ConfigError`` as one line
``<file>: <dotted.key>: <problem>; <fix>`` when the file is loaded, before any model is built. Building a config
in code (``TrainConfig(...)``, ``dataclasses.replace``) runs the same checks.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from mara_bench.core.typed_config import (
    ConfigError,
    ConfigProblem,
    config_dataclass,
    did_you_mean,
    load_yaml,
    validate,
)
from mara_bench.trainer import registry
from mara_bench.trainer.adapter_config import VLLM_LORA_RANKS, LoraConfig, RoleConfig, check_roles
from mara_bench.trainer.algorithm_config import (
    MARSRL_ROLLOUTS,
    MARSRL_SELECTIONS,
    AlgorithmConfig,
    MarsRLConfig,
    MaskConfig,
)
from mara_bench.trainer.task_config import GraderConfig, TaskConfig

Dtype = Literal["auto", "float32", "bfloat16"]
ParityAction = Literal["auto", "warn", "fail", "off"]
TinyArch = Literal["qwen2", "llama"]
Backend = Literal["auto", "hf", "vllm"]
Scheduler = Literal["continuous", "static"]
Batching = Literal["shared-prefix", "bucket", "pack"]
Parallel = Literal["replicate", "fsdp"]

ROLLOUT_SCHEDULERS = typing.get_args(Scheduler)


@config_dataclass
class ModelConfig:
    path: StrictStr | None = None
    """An HF model directory or id; empty means: build the tiny offline model into ``<out>/base-model``."""
    tiny_arch: TinyArch = "qwen2"
    """Architecture of the tiny model built when ``path`` is empty (``qwen2`` or ``llama``)."""
    tiny_hidden_size: StrictInt = Field(default=32, ge=4, multiple_of=4)
    """Hidden size of that tiny model (a multiple of 4: 4 attention heads; 64 learns the multi-agent formats of
    the cold start faster)."""
    dtype: Dtype = "auto"
    """Compute dtype: ``float32``, ``bfloat16``, or ``auto``: bfloat16 on a GPU, float32 on the CPU. Trained
    models keep float32 parameters whatever it is (their forwards autocast to it); the frozen reference model and
    the vLLM engine hold their weights in it."""
    gradient_checkpointing: StrictBool = False
    """Recompute each decoder layer's activations in the backward pass instead of keeping them (the policy's and
    the critic's training forwards; verl's ``enable_gradient_checkpointing``): activation memory falls from one
    per layer to one layer's, for about one more forward of compute. The gradients are the same."""
    lora: LoraConfig | None = None
    """Train a LoRA adapter per role over the frozen base instead of the full weights (``roles`` says which
    adapter each role trains; ``mara_bench.trainer.adapter_config``); null: full weights."""

    def torch_dtype(self, *, cuda: bool) -> Any:
        """The parameter dtype as a ``torch.dtype`` (``auto`` resolved for a run on a GPU or not)."""
        import torch

        return getattr(torch, ("bfloat16" if cuda else "float32") if self.dtype == "auto" else self.dtype)


@config_dataclass
class RolloutConfig:
    prompts_per_step: StrictInt = Field(default=8, ge=1)
    """Questions per step, over all ranks."""
    group_size: StrictInt = Field(default=8, ge=1)
    """Episodes sampled per question (the GRPO group); under MarsRL's grouped rollouts, the samples each agent
    draws per input."""
    max_tokens: StrictInt = Field(default=16, ge=1)
    """Most new tokens per model call."""
    max_context_tokens: StrictInt | None = Field(default=None, ge=2)
    """Most tokens one call's prompt and response may hold together (an engine's context length, verl's
    ``max_prompt_length + max_response_length``). A multi-turn call's prompt holds the conversation so far, so this
    bounds the whole conversation: each call may add at most what is left (and at most ``max_tokens``); a call
    whose prompt already fills it ends at once with finish reason ``length`` and no tokens. Null: no such bound.
    Not with segment / pipelined rollouts (there ``max_tokens`` bounds each call)."""
    temperature: StrictFloat = Field(default=1.0, gt=0)
    """Sampling temperature; the loss scores tokens at this same temperature."""
    top_p: StrictFloat = Field(default=1.0, gt=0, le=1)
    """Nucleus sampling mass."""
    backend: Backend = "auto"
    """Generation engine: ``hf`` (transformers, CPU or GPU), ``vllm`` (a colocated vLLM engine synced to the
    policy each step; its CUDA build or its CPU build) or ``auto`` (vLLM when it is installed and the policy's
    checkpoint has 100 MiB of weights or more), as ``local/`` picks (``mara_bench.harness.providers.backends``). ``vllm``
    where the package is missing is refused when the recipe is loaded."""
    parity: ParityAction = "auto"
    """Whether each step measures the rollout-trainer logprob gap (``rollout/logprob_gap_mean``: the mean over the
    measured generated tokens of |engine logprob - trainer forward logprob|, ``mara_bench.trainer.rollouts.parity``; an
    extra no-gradient forward) and what it does when the gap exceeds ``parity_bound``: ``warn`` (print one line
    and go on), ``fail`` (stop the run), ``off`` (not measured) or ``auto``: ``warn`` where the engine that
    samples is not the trained model itself (a vLLM engine: other kernels, its own copy of the weights in
    ``model.dtype``), ``off`` on the ``hf`` backend, which samples with the policy's own forward."""
    parity_share: StrictFloat = Field(default=0.25, gt=0, le=1)
    """Share of the step's rows whose tokens the parity check scores (evenly spaced, at least one row; 1: all);
    reported as ``rollout/parity_share``."""
    parity_bound: StrictFloat = Field(default=0.02, gt=0)
    """The largest ``rollout/logprob_gap_mean`` a step accepts."""
    parity_tolerance: StrictFloat = Field(default=0.05, gt=0)
    """A token whose gap exceeds this counts in ``rollout/logprob_gap_over_tol`` (the share of such tokens); also
    the largest ``rollout/sync_gap_max`` (a vLLM engine's check after each weight sync) a step accepts."""
    vllm_gpu_memory: StrictFloat = Field(default=0.3, gt=0, le=1)
    """Share of the GPU memory the vLLM engine may take (weights + KV cache); the rest is left for training."""
    scheduler: Scheduler = "continuous"
    """How the ``hf`` backend batches the concurrent calls of the step's episodes
    (``mara_bench.trainer.learner.policy``): ``continuous`` (rows join and leave a running batch between decode steps, so
    an episode's next call starts while longer rows still run; deterministic: the same seed gives the same
    tokens) or ``static`` (the calls pending together run as one batch to its longest row). The ``vllm``
    backend always batches statically (vLLM schedules continuously inside each batch)."""
    segment_tokens: StrictInt | None = Field(default=None, ge=1)
    """MarsRL's segment rollouts (arXiv:2511.11373 §3.4; ``method: marsrl``): decode in rounds of this many tokens
    (``mara_bench.trainer.rollouts.segments``); a call that ends within a round goes on at once, an unfinished one
    continues next round, maybe under newer weights within ``algorithm.marsrl.max_staleness`` (paper: 64k in 4
    x 16k). Rollout and training then run side by side (``mara_bench.trainer.rollouts.pipelined``); null: each step rolls
    out to its end."""
    frozen_roles: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    """Roles served by a fixed model instead of the policy, never trained: role -> an Inspect model string
    (``local/<dir>``, ``openai/<model>``, ``openai-api/<service>/<model>`` for an OpenAI-compatible endpoint), e.g.
    ``{solver: local/Qwen/Qwen3-8B}`` to train MarsRL's Verifier and Corrector against a fixed Solver
    (``mara_bench.trainer.rollouts.frozen_roles``)."""

    @model_validator(mode="after")
    def _vllm_is_installed(self) -> RolloutConfig:
        from mara_bench.harness.providers.backends import missing_vllm, vllm_ready

        if self.backend == "vllm" and not vllm_ready():
            raise ConfigProblem("backend", missing_vllm("vllm", "set rollout.backend: hf (or auto)"))
        return self


@config_dataclass
class OptimConfig:
    lr: StrictFloat = Field(default=1e-3, gt=0)
    """AdamW peak learning rate."""
    weight_decay: StrictFloat = Field(default=0.0, ge=0)
    """AdamW weight decay."""
    betas: tuple[StrictFloat, StrictFloat] = (0.9, 0.999)
    """AdamW betas, each in [0, 1)."""
    grad_clip: StrictFloat = Field(default=1.0, gt=0)
    """Clip the global gradient norm to this; a non-finite norm skips the step."""
    warmup_steps: StrictInt = Field(default=0, ge=0)
    """Linear warm-up steps, then constant."""
    token_budget: StrictInt = Field(default=4096, ge=1)
    """Most token positions (padding included) one micro-batch computes."""
    batching: Batching = "shared-prefix"
    """Micro-batch layout: ``shared-prefix`` (rows of one role and prompt compute it once, the others as
    ``bucket``; ``bucket`` where it cannot apply: ``mara_bench.trainer.learner.shared_prefix``), ``bucket``
    (length-sorted rows, bounded padding) or ``pack`` (one packed sequence)."""
    max_padding: StrictFloat = Field(default=0.1, ge=0, le=1)
    """Bucket layout (and ``shared-prefix``'s rows outside groups): most padding share of any micro-batch."""
    offload_optimizer: StrictBool = False
    """Keep AdamW's moments in CPU memory between optimizer steps, moving them to the parameters' device only
    for the step (verl's ``optimizer_offload``; ``mara_bench.trainer.learner.offload``): frees two parameter-sized
    tensors of accelerator memory per trained model, at the cost of two host-device copies per step. Same
    updates."""

    @model_validator(mode="after")
    def _betas_in_range(self) -> OptimConfig:
        if not all(0 <= beta < 1 for beta in self.betas):
            raise ConfigProblem(
                "betas", f"each must be in [0, 1), got {list(self.betas)}", "for example [0.9, 0.999]"
            )
        return self


@config_dataclass
class WarmupConfig:
    """The cold start before RL (``mara_bench.trainer.run.warmup``): supervised fine-tuning on scripted demonstrations of
    the recipe's system (``mara_bench.trainer.demos``), with the loss masks the RL stage uses. Not ``optim.warmup_steps``
    (the RL learning rate's ramp)."""

    steps: StrictInt = Field(default=0, ge=0)
    """Fine-tuning steps before the first RL step; 0 = no cold start."""
    lr: StrictFloat = Field(default=1e-3, gt=0)
    """Initial AdamW learning rate of the fine-tuning, decaying linearly towards 0 (its own optimizer; the RL
    stage starts afresh with ``optim``). Under ``model.lora`` each adapter's is this times its role's ``lr`` over
    ``optim.lr`` (``RoleAdapters.cold_start_rates``)."""
    demos_per_item: StrictInt = Field(default=4, ge=1)
    """Scripted runs of the system per question (under MarsRL's grouped rollouts: grouped rollouts)."""
    batch_size: StrictInt = Field(default=16, ge=1)
    """Demonstration samples per fine-tuning step."""
    demo_skills: dict[StrictStr, Annotated[StrictFloat, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    """Per role of the system, the probability that its scripted decision is right (a right answer, a true
    verdict), overriding the demonstration policy's default (``trainer/demos/<system>.py`` ``SKILLS``)."""
    demo_work: list[StrictStr] = Field(default_factory=list)
    """The roles whose demonstrations show the working behind each decision, where the system's policy has a
    worked form for them (``trainer/demos/vc.py``: the Verifier checks the answer's last digit, the Corrector adds
    column by column)."""
    critic_steps: StrictInt = Field(default=0, ge=0)
    """Steps fitting the critic (``algorithm.advantage: gae``) to the demonstrations' returns after the policy's
    fine-tuning (same ``lr`` and ``batch_size``); 0 leaves the critic's value head as initialised."""


@config_dataclass
class EvalConfig:
    """The held-out evaluation (``mara_bench.trainer.run.heldout``) on the task's held-out split
    (``task.args.heldout_prompts``)."""

    every: StrictInt = Field(default=0, ge=0)
    """``mara train`` evaluates after the cold start, every this many RL steps and after the last; 0 = never."""
    samples: StrictInt = Field(default=4, ge=1)
    """Runs per held-out question (MarsRL's Verifier probe: verdicts per judged solution)."""


@config_dataclass
class TrainConfig:
    model: ModelConfig = Field(default_factory=ModelConfig)
    """The policy to train."""
    task: TaskConfig = Field(default_factory=TaskConfig)
    """What to train on and how rollouts are run."""
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    """How episodes are sampled."""
    algorithm: AlgorithmConfig = Field(default_factory=AlgorithmConfig)
    """Advantages and losses."""
    optim: OptimConfig = Field(default_factory=OptimConfig)
    """Optimizer and batching."""
    warmup: WarmupConfig = Field(default_factory=WarmupConfig)
    """The cold start: supervised fine-tuning on scripted demonstrations before RL."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """The periodic held-out evaluation."""
    steps: StrictInt = Field(default=20, ge=1)
    """Training steps (one rollout batch each)."""
    seed: StrictInt = Field(default=0, ge=0)
    """Seed of every random generator (data order, sampling, initialisation)."""
    save_every: StrictInt = Field(default=10, ge=0)
    """Save a checkpoint and an HF export every this many steps (and at the end); 0 = only at the end."""
    parallel: Parallel = "replicate"
    """Under ``torchrun``: ``replicate`` (each rank a whole model, gradients all-reduced) or ``fsdp`` (FSDP2:
    parameters, gradients and optimizer state sharded across ranks). Ignored by a single process."""
    roles: dict[StrictStr, RoleConfig] = Field(default_factory=dict)
    """Under ``model.lora``, per role of the system: its adapter (``own``, ``shared`` or ``frozen``) and learning
    rate; a role left out trains its own adapter at ``optim.lr``."""

    @model_validator(mode="after")
    def _role_adapters_fit_the_run(self) -> TrainConfig:
        if self.model.lora is None:
            if self.roles:
                raise ConfigProblem(
                    "roles", "sets per-role adapters, and model.lora is null", "add model.lora: {}"
                )
            return self
        from mara_bench.harness.systems import SYSTEMS

        known = SYSTEMS[self.task.system].roles if self.task.system in SYSTEMS else ()
        try:
            check_roles(self.roles, known, self.task.system)
        except ConfigProblem as problem:
            raise ConfigProblem(f"roles.{problem.key}".rstrip("."), str(problem)) from None
        clashes = sorted(set(self.roles) & set(self.rollout.frozen_roles))
        if clashes:
            raise ConfigProblem(
                f"roles.{clashes[0]}",
                "is served by another model (rollout.frozen_roles)",
                "remove one of the two",
            )
        refusals = {
            "optim.batching": (
                self.optim.batching == "pack",
                "packs rows of several roles into one sequence, and each row needs its role's adapter",
                "set optim.batching: bucket",
            ),
            "model.lora.r": (
                self.rollout.backend == "vllm" and self.model.lora.r > VLLM_LORA_RANKS[-1],
                f"{self.model.lora.r} is above the largest LoRA rank vLLM serves ({VLLM_LORA_RANKS[-1]}) under "
                "rollout.backend: vllm",
                f"set r to at most {VLLM_LORA_RANKS[-1]}, or rollout.backend: hf",
            ),
            "rollout.segment_tokens": (
                self.rollout.segment_tokens is not None or self.algorithm.marsrl.pipeline,
                "pipelined rollouts decode on a snapshot of full weights, not per-role adapters",
                "remove it and algorithm.marsrl.pipeline",
            ),
            "parallel": (
                self.parallel == "fsdp",
                "per-role adapters are trained replicated",
                "set parallel: replicate",
            ),
        }
        for key, (refused, problem, fix) in refusals.items():
            if refused:
                raise ConfigProblem(key, f"{problem} (model.lora)", fix)
        return self

    @model_validator(mode="after")
    def _streaming_rollouts_need_marsrl(self) -> TrainConfig:
        if self.rollout.segment_tokens is None and not self.algorithm.marsrl.pipeline:
            return self
        key = (
            "rollout.segment_tokens"
            if self.rollout.segment_tokens is not None
            else "algorithm.marsrl.pipeline"
        )
        if self.algorithm.method != "marsrl" or self.task.system != "vc":
            raise ConfigProblem(key, "needs algorithm.method marsrl on task.system vc", "remove it")
        if self.rollout.backend == "vllm":
            raise ConfigProblem(
                key, "decodes with transformers on a policy snapshot", "set rollout.backend: hf"
            )
        if self.rollout.max_context_tokens is not None:
            raise ConfigProblem(
                "rollout.max_context_tokens",
                f"is not applied under {key} (each call is bounded by rollout.max_tokens)",
                "remove it",
            )
        return self

    @model_validator(mode="after")
    def _mini_batches_divide_the_batch(self) -> TrainConfig:
        size = self.algorithm.ppo_mini_batch_size
        if size is not None and self.rollout.prompts_per_step % size:
            raise ConfigProblem(
                "algorithm.ppo_mini_batch_size",
                f"{size} does not divide rollout.prompts_per_step ({self.rollout.prompts_per_step})",
                "use a divisor of it, or null for one optimizer step per epoch",
            )
        return self

    @model_validator(mode="after")
    def _frozen_roles_are_the_systems(self) -> TrainConfig:
        if not self.rollout.frozen_roles:
            return self
        from mara_bench.harness.systems import SYSTEMS

        known = SYSTEMS[self.task.system].roles if self.task.system in SYSTEMS else ()
        for role in self.rollout.frozen_roles:
            if role not in known:
                raise ConfigProblem(
                    f"rollout.frozen_roles.{role}",
                    f"system {self.task.system!r} has no role {role!r}",
                    f"{did_you_mean(role, known)}its roles: {', '.join(known)}",
                )
        if set(self.rollout.frozen_roles) == set(known):
            raise ConfigProblem(
                "rollout.frozen_roles", "freezes every role, so nothing trains", "leave one out"
            )
        if self.rollout.segment_tokens is not None or self.algorithm.marsrl.pipeline:
            raise ConfigProblem(
                "rollout.frozen_roles",
                "runs with the step's own rollout only",
                "remove rollout.segment_tokens and algorithm.marsrl.pipeline",
            )
        return self

    @model_validator(mode="after")
    def _warmup_fits_the_run(self) -> TrainConfig:
        if (
            self.warmup.critic_steps
            and not registry.ADVANTAGE_ESTIMATORS[self.algorithm.advantage].needs_critic
        ):
            raise ConfigProblem(
                "warmup.critic_steps",
                f"fits the critic, and algorithm.advantage {self.algorithm.advantage!r} trains none",
                "remove it, or use algorithm.advantage: gae",
            )
        if self.warmup.steps:
            if self.task.system not in registry.DEMO_POLICIES:
                raise ConfigProblem(
                    "warmup.steps",
                    f"no demonstration policy (trainer/demos/) for task.system {self.task.system!r}",
                    f"set warmup.steps: 0, or use a system with one: {', '.join(sorted(registry.DEMO_POLICIES))}",
                )
            policy = registry.DEMO_POLICIES[self.task.system].load()
            roles = policy.skills
            unknown = sorted(set(self.warmup.demo_skills) - set(roles))
            if unknown:
                raise ConfigProblem(
                    "warmup.demo_skills",
                    f"the {self.task.system} demonstration policy has no skill for {', '.join(unknown)}",
                    f"use its roles: {', '.join(sorted(roles))}",
                )
            unworked = sorted(set(self.warmup.demo_work) - policy.worked_roles)
            if unworked:
                worked = sorted(
                    f"{name} ({', '.join(sorted(entry.load().worked_roles))})"
                    for name, entry in registry.DEMO_POLICIES.items()
                    if entry.load().worked_roles
                )
                raise ConfigProblem(
                    "warmup.demo_work",
                    f"the {self.task.system} demonstration policy has no worked form for {', '.join(unworked)}",
                    f"remove it, or use a system and roles with one: {'; '.join(worked)}",
                )
        elif self.warmup.demo_skills:
            raise ConfigProblem(
                "warmup.demo_skills",
                "sets the cold start's demonstrations, and warmup.steps is 0",
                "remove it",
            )
        return self


def from_dict(cls: type, data: Any, where: str = "config") -> Any:
    """Build configuration class ``cls`` from plain data; any problem raises ``ConfigError`` naming ``where``."""
    return validate(cls, data, where)


def load_config(path: str | Path) -> TrainConfig:
    """Read a YAML recipe into a ``TrainConfig``; every problem raises ``ConfigError`` naming the file and key."""
    data = load_yaml(path)
    if data is None:
        raise ConfigError(
            f"{path}: the recipe is empty; write the settings to train with "
            "(trainer/recipes/grpo-toy.yaml is a small example), or `{}` for every default"
        )
    return from_dict(TrainConfig, data, str(path))


def replace(config: TrainConfig, source: str, **changes: Any) -> TrainConfig:
    """``config`` with ``changes`` (e.g. a command-line override named ``source``), checked like the file."""
    return from_dict(TrainConfig, {**to_dict(config), **changes}, source)


def to_dict(config: TrainConfig) -> dict[str, Any]:
    """The config as plain data (for the run directory and checkpoints)."""
    return dataclasses.asdict(config)


__all__ = [
    "MARSRL_ROLLOUTS",
    "MARSRL_SELECTIONS",
    "AlgorithmConfig",
    "ConfigError",
    "GraderConfig",
    "MarsRLConfig",
    "MaskConfig",
    "ModelConfig",
    "OptimConfig",
    "RolloutConfig",
    "TaskConfig",
    "TrainConfig",
    "load_config",
    "to_dict",
]
