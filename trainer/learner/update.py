"""The update step: one batch of rows becomes an optimizer step on the policy (and the critic).

Old logprobs are recomputed on micro-batches when the batch takes more than one optimizer step (``ppo_epochs`` > 1
or several PPO mini-batches, ``mara_bench.trainer.learner.mini_batches``; with one step the policy being trained is the
one that sampled, so the training forward's own detached logprobs are the old ones, as TRL does), reference
logprobs and critic values likewise; the recipe's advantage estimator (``algorithm.advantage``,
``mara_bench.trainer.algorithms.estimators``) assigns advantages over the whole batch; then per epoch and mini-batch, the
recipe's policy loss (``algorithm.policy_loss``, the clipped surrogate) plus KL, entropy and value loss is
accumulated over its micro-batches with the mini-batch's GLOBAL token/row counts, gradients are summed across
ranks and clipped, and AdamW steps -- unless the loss or the gradient norm is non-finite, which skips the rest
of the update. The learning-rate schedule advances once per rollout batch.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.distributed.tensor import DTensor
from torch.nn.utils.rnn import pad_sequence

from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.estimators import AdvantageBatch, advantage_estimator
from mara_bench.trainer.algorithms.losses import aggregate, get_policy_loss, kl
from mara_bench.trainer.algorithms.mastered_tokens import mastered_positive_tokens
from mara_bench.trainer.config import AlgorithmConfig, OptimConfig, RolloutConfig
from mara_bench.trainer.learner import role_metrics
from mara_bench.trainer.learner.adamw import adamw
from mara_bench.trainer.learner.adapters import adapter_parameters, plan_of
from mara_bench.trainer.learner.distributed import Distributed
from mara_bench.trainer.learner.logprobs import response_scores
from mara_bench.trainer.learner.mini_batches import mini_batch_count, mini_batch_layout
from mara_bench.trainer.learner.offload import optimizer_on_device
from mara_bench.trainer.learner.packing import MicroBatch, padding_share, response_logits, response_values
from mara_bench.trainer.learner.shared_prefix import layout_for
from mara_bench.trainer.methods import Method

logger = logging.getLogger(__name__)


def pad_rows(values: list[Tensor]) -> Tensor:
    """Right-pad 1-D per-row tensors into a ``(B, T)`` matrix."""
    return pad_sequence(values, batch_first=True)


@dataclass(frozen=True)
class LossCounts:
    """The whole batch's counts every micro-batch's loss share divides by
    (``mara_bench.trainer.algorithms.losses.aggregate``)."""

    global_tokens: int
    """Trained tokens, over micro-batches and ranks."""
    global_rows: int
    """Rows with at least one trained token, over micro-batches and ranks."""
    norm_length: int
    """The constant length ``seq-mean-token-sum-norm`` divides by."""

    def kwargs(self) -> dict[str, int]:
        """The counts as ``aggregate`` / ``policy_loss`` keyword arguments."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class MicroRows:
    """One micro-batch's rows, right-padded to ``(B, T)`` (``None``: that input is not used this run)."""

    mask: Tensor
    advantages: Tensor
    old: Tensor | None
    ref: Tensor | None
    values: Tensor | None
    returns: Tensor | None
    roles: Tensor
    """``(B,)`` each row's index in the system's roles (-1: in no role metric)."""
    role_tokens: Tensor
    """Each role's trained tokens over the whole batch (the role metrics' denominators)."""


@dataclass
class UpdateRows:
    """The batch's per-row tensors, in micro-batch order (``None``: that input is not used this run)."""

    masks: list[Tensor]
    """Bool loss masks (well-mastered positive tokens left out under dynamic masking)."""
    advantages: list[Tensor]
    old: list[Tensor] | None
    """Logprobs under the policy that sampled (several optimizer steps; else the training forward's own)."""
    ref: list[Tensor] | None
    values: list[Tensor] | None
    returns: list[Tensor] | None
    roles: Tensor
    role_tokens: Tensor
    mastered: float
    """Tokens dynamic masking took out of this rank's masks."""

    def part(self, rows: slice) -> MicroRows:
        """The rows ``rows`` of the batch, padded."""

        def padded(values: list[Tensor] | None) -> Tensor | None:
            return pad_rows(values[rows]) if values is not None else None

        return MicroRows(
            mask=pad_rows(self.masks[rows]),
            advantages=pad_rows(self.advantages[rows]),
            old=padded(self.old),
            ref=padded(self.ref),
            values=padded(self.values),
            returns=padded(self.returns),
            roles=self.roles[rows],
            role_tokens=self.role_tokens,
        )


class PolicyUpdate:
    """The models the update trains or reads, their AdamW optimizer and learning-rate schedule, and the entropy
    of the previous update (read by dynamic masking)."""

    def __init__(
        self,
        algorithm: AlgorithmConfig,
        optim: OptimConfig,
        rollout: RolloutConfig,
        dist: Distributed,
        method: Method,
        roles: list[str],
        policy: torch.nn.Module,
        reference: torch.nn.Module | None,
        critic: torch.nn.Module | None,
    ):
        self.algorithm, self.optim, self.rollout = algorithm, optim, rollout
        """The recipe's sections the update reads (``rollout``: the sampling temperature, the step's questions
        and the response length)."""
        self.dist, self.method, self.roles = dist, method, roles
        self.estimator = advantage_estimator(algorithm.advantage)
        self.policy_loss = get_policy_loss(algorithm.policy_loss)
        self.policy, self.reference, self.critic = policy, reference, critic
        self.trained = torch.nn.ModuleDict({"policy": policy})
        """The models the optimizer steps (its state is keyed by their parameter names)."""
        self.adapters = plan_of(policy)
        """Per-role adapters (``model.lora``): one parameter group each, its own learning rate, clipped alone."""
        groups: list[dict] = [{"params": list(policy.parameters()), "lr": optim.lr}]
        if self.adapters is not None:
            groups = [
                {"params": adapter_parameters(policy, name), "lr": lr, "adapter": name}
                for name, lr in self.adapters.learning_rates.items()
            ]
        self.adapter_grad_norms: dict[str, float] = {}
        """Each trained adapter's gradient norm before clipping, at the last optimizer step."""
        self.adapter_updates: dict[str, float] = {}
        """Each trained adapter's weight change (L2 norm) summed over the optimizer steps of the last update."""
        if critic is not None:
            self.trained["critic"] = critic
            groups.append({"params": list(critic.parameters()), "lr": algorithm.critic_lr})
        self.optimizer = adamw(groups, betas=optim.betas, weight_decay=optim.weight_decay)
        warmup = optim.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
        )
        self.last_entropy: float | None = None
        """The policy entropy of the previous update (token mean), read by dynamic masking."""
        self.batching, reason = layout_for(optim.batching, policy, critic=critic, sharded=dist.sharded)
        """The micro-batch layout: ``optim.batching``, or ``bucket`` where ``shared-prefix`` cannot apply."""
        if reason is not None:
            logger.info("optim.batching: shared-prefix lays rows out as bucket: %s", reason)

    @torch.no_grad()
    def _score_tokens(self, model: torch.nn.Module, batches: list[MicroBatch]) -> list[Tensor]:
        """Per-sample response-token logprobs under ``model`` (at the sampling temperature), batch order."""
        temperature = self.rollout.temperature
        scored = []
        with self.dist.gathered(model):
            for batch in batches:
                flat = response_scores(model, batch, temperature).logprobs
                scored += list(flat.split(batch.response_lengths))
        return scored

    def _masks_mastered_tokens(self) -> bool:
        """MarsRL/UloRL's dynamic masking is on and the entropy of the previous update fell below its target."""
        target = self.algorithm.mpt_target_entropy
        return target is not None and self.last_entropy is not None and self.last_entropy < target

    def __call__(self, samples: list[Sample], step: int, *, behaviour: bool = False) -> dict[str, float]:
        """Update the policy (and critic) on ``samples``; the step's metrics (``skipped`` = 1 when no update was
        made). Sets the rows' GRPO / GAE advantages in place. With ``behaviour`` the rows' ``old_logprobs`` are the
        (older) sampling policy's own and are the importance ratios' denominators (pipelined rollouts)."""
        optim, algo = self.optim, self.algorithm
        parts = mini_batch_count(self.rollout.prompts_per_step, algo.ppo_mini_batch_size)
        layout = mini_batch_layout(samples, parts, optim.token_budget, self.batching, optim.max_padding)
        batches = [batch for part in layout for batch in part]
        data = self._rows(samples, batches, behaviour, several_steps=algo.ppo_epochs > 1 or parts > 1)
        counts = self._counts(data.masks)
        if counts is None:
            return {"skipped": 1.0}
        sums = self._epochs(layout, data, counts, step)
        if sums is None:
            return {"skipped": 1.0}
        self.scheduler.step()
        reduced = dict(zip(sums, self.dist.sum(list(sums.values())), strict=True))
        reduced["grad_norm"] = sums["grad_norm"]
        adv = torch.cat([a[m] for a, m in zip(data.advantages, data.masks, strict=True)])
        self.last_entropy = reduced["entropy"]
        return {
            **reduced,
            "mastered_tokens_masked": self.dist.sum([data.mastered])[0],
            "skipped": 0.0,
            "advantage_mean": float(adv.mean()) if adv.numel() else 0.0,
            "advantage_std": float(adv.std()) if adv.numel() > 1 else 0.0,
            "response_length": sum(len(s.response_ids) for s in samples) / len(samples),
            "micro_batches": float(len(batches)),
            "mini_batches": float(parts),
            "padding_share": padding_share(batches),
            **self.adapter_metrics(),
        }

    def _rows(
        self, samples: list[Sample], batches: list[MicroBatch], behaviour: bool, *, several_steps: bool
    ) -> UpdateRows:
        """The batch's per-row tensors in micro-batch order: old (the rows' own behaviour logprobs with
        ``behaviour``; recomputed when the batch takes ``several_steps``), reference and critic values,
        advantages, and the loss masks (well-mastered positive tokens left out when dynamic masking is on)."""
        algo = self.algorithm
        order = [row for batch in batches for row in batch.rows]
        old = None  # one optimizer step on the policy that sampled: its logprobs ARE the old ones (detached)
        if behaviour:
            old = [torch.tensor(samples[row].old_logprobs, dtype=torch.float32) for row in order]
        elif several_steps:
            old = self._score_tokens(self.policy, batches)
            for row, logprobs in zip(order, old, strict=True):
                samples[row].old_logprobs = logprobs.tolist()
        ref = self._score_tokens(self.reference, batches) if self.reference is not None else None
        values = None
        if self.critic is not None:
            with torch.no_grad(), self.dist.gathered(self.critic):
                values = [
                    v for b in batches for v in response_values(self.critic, b).split(b.response_lengths)
                ]
        ordered = [samples[row] for row in order]
        float_masks = [torch.tensor(s.loss_mask, dtype=torch.float32) for s in ordered]
        assigned = self.method.advantages is not None
        estimated = self.estimator.estimate(AdvantageBatch(ordered, float_masks, values, algo, assigned))
        masks = [torch.tensor(s.loss_mask, dtype=torch.bool) for s in ordered]
        mastered = 0.0
        if self._masks_mastered_tokens():
            probe = old if old is not None else self._score_tokens(self.policy, batches)
            kept = [
                mask & ~mastered_positive_tokens(logprobs.cpu(), samples[row].reward, algo.mpt_probability)
                for mask, logprobs, row in zip(masks, probe, order, strict=True)
            ]
            mastered = float(sum(int(m.sum()) - int(k.sum()) for m, k in zip(masks, kept, strict=True)))
            masks = kept
        index = {role: i for i, role in enumerate(self.roles)}  # another role (-1): in no role metric
        return UpdateRows(
            masks=masks,
            advantages=estimated.advantages,
            old=old,
            ref=ref,
            values=values,
            returns=estimated.returns,
            roles=torch.tensor([index.get(s.role, -1) for s in ordered], dtype=torch.long),
            role_tokens=torch.tensor(self.dist.sum(role_metrics.role_tokens(ordered, self.roles))),
            mastered=mastered,
        )

    def _counts(self, masks: list[Tensor]) -> LossCounts | None:
        """The whole batch's trained tokens and rows, over ranks; ``None`` when no token is trained."""
        local_counts = [sum(int(m.sum()) for m in masks), sum(int(m.any()) for m in masks)]
        tokens, active_rows = (int(x) for x in self.dist.sum(local_counts))
        if tokens == 0:
            return None
        algo = self.algorithm
        norm_length = algo.norm_length if algo.norm_length is not None else self.rollout.max_tokens
        return LossCounts(global_tokens=tokens, global_rows=active_rows, norm_length=norm_length)

    def _epochs(
        self, layout: list[list[MicroBatch]], data: UpdateRows, counts: LossCounts, step: int
    ) -> dict[str, float] | None:
        """``ppo_epochs`` passes, each one optimizer step per mini-batch of ``layout``; the first epoch's metric
        sums (this rank's; token means over the whole batch, each mini-batch weighted by its trained tokens, and
        the mean gradient norm), or ``None`` when a loss or gradient norm was non-finite (the update stops)."""
        self.policy.train()
        # FSDP: every rank must make the same number of forward/backward passes per optimizer step
        sizes = [len(part) for part in layout]
        idle = [self.dist.most(size) - size for size in sizes] if self.dist.sharded else [0] * len(sizes)
        any_batch = next((batch for part in layout for batch in part), None)  # for FSDP's idle passes
        sums: dict[str, float] = {}
        grad_norms: list[float] = []
        for epoch in range(self.algorithm.ppo_epochs):
            first_row = 0
            for part, idle_passes in zip(layout, idle, strict=True):
                rows = slice(first_row, first_row + sum(len(batch.rows) for batch in part))
                first_row = rows.stop
                part_counts = self._counts(data.masks[rows])  # the same on every rank: a global count
                if part_counts is None:
                    continue
                for _ in range(idle_passes):
                    assert any_batch is not None, "an FSDP rank with no rows to train"
                    self._idle_pass(any_batch)
                part_sums: dict[str, float] | None = {} if epoch == 0 else None
                finite = self._accumulate(part, data, part_counts, rows.start, part_sums)
                grad_norm = self._optimizer_step(finite, step)
                if grad_norm is None:
                    return None
                if part_sums is not None:
                    share = part_counts.global_tokens / counts.global_tokens
                    for name, value in part_sums.items():
                        weight = 1.0 if name.startswith("role/") else share  # role shares: whole-batch counts
                        sums[name] = sums.get(name, 0.0) + weight * value
                    grad_norms.append(grad_norm)
        sums["grad_norm"] = sum(grad_norms) / len(grad_norms)
        return sums

    def _accumulate(
        self,
        batches: list[MicroBatch],
        data: UpdateRows,
        counts: LossCounts,
        first_row: int,
        sums: dict[str, float] | None,
    ) -> bool:
        """Backward every micro-batch's share of the loss (its rows start at ``first_row`` of ``data``), adding
        its metrics to ``sums`` when given; whether every share was finite."""
        start, finite = first_row, True
        for batch in batches:
            part = data.part(slice(start, start + len(batch.rows)))
            start += len(batch.rows)
            loss, stats = self._micro_batch_loss(batch, part, counts)
            finite = finite and bool(torch.isfinite(loss))
            loss.backward()  # even when non-finite: the step is dropped below, after every rank's passes
            if sums is not None:
                for name, value in stats.items():
                    sums[name] = sums.get(name, 0.0) + float(value)
        return finite

    def _optimizer_step(self, finite: bool, step: int) -> float | None:
        """Sum the gradients over ranks, clip them and step AdamW; the gradient norm, or ``None`` (gradients
        dropped, step reported skipped) when a rank's loss or the norm is non-finite."""
        parameters = [p for group in self.optimizer.param_groups for p in group["params"]]
        if self.dist.sum([0.0 if finite else 1.0])[0] > 0:
            self.optimizer.zero_grad(set_to_none=True)
            logger.warning("step %d: non-finite loss; step skipped", step)
            return None
        self.dist.sum_gradients(parameters)
        self._drop_idle_adapters()
        grad_norm = self._clip()
        if isinstance(grad_norm, DTensor):
            grad_norm = grad_norm.full_tensor()
        if not torch.isfinite(grad_norm):
            self.optimizer.zero_grad(set_to_none=True)
            logger.warning("step %d: non-finite gradient norm; step skipped", step)
            return None
        before = self._adapter_weights()
        with optimizer_on_device(self.optimizer, self.optim.offload_optimizer):
            self.optimizer.step()
        for name, weights in before.items():
            moved = sum(
                float((p.detach() - w).square().sum())
                for p, w in zip(self._groups[name], weights, strict=True)
            )
            self.adapter_updates[name] = self.adapter_updates.get(name, 0.0) + moved**0.5
        self.optimizer.zero_grad(set_to_none=True)
        return float(grad_norm)

    def _drop_idle_adapters(self) -> None:
        """Under per-role adapters, drop the gradients of an adapter whose role had no row in this step (all zero
        after the ranks' sum): AdamW then leaves it as it is, where its momentum and weight decay would move it."""
        for weights in self._groups.values():
            if all(p.grad is None or not p.grad.any() for p in weights):
                for p in weights:
                    p.grad = None

    def _clip(self) -> Tensor:
        """Clip the gradients to ``optim.grad_clip`` -- their global norm, or under per-role adapters each
        group's own (one role's large gradient does not shrink another's step) -- and return the norm over all
        of them before clipping."""
        clip, groups = self.optim.grad_clip, self.optimizer.param_groups
        if self.adapters is None:
            return torch.nn.utils.clip_grad_norm_([p for g in groups for p in g["params"]], clip)
        norms = [torch.nn.utils.clip_grad_norm_(group["params"], clip) for group in groups]
        self.adapter_grad_norms = {
            group["adapter"]: float(norm)
            for group, norm in zip(groups, norms, strict=True)
            if "adapter" in group
        }
        return torch.linalg.vector_norm(torch.stack(norms))

    @property
    def _groups(self) -> dict[str, list[Tensor]]:
        """Each trained adapter's parameters (its optimizer group)."""
        return {g["adapter"]: g["params"] for g in self.optimizer.param_groups if "adapter" in g}

    def _adapter_weights(self) -> dict[str, list[Tensor]]:
        """A copy of each trained adapter's weights (small: the adapters only), to measure the step's change."""
        return {name: [p.detach().clone() for p in params] for name, params in self._groups.items()}

    def adapter_metrics(self) -> dict[str, float]:
        """Per role, of its adapter: ``role/<role>/lr``, ``role/<role>/grad_norm`` (last optimizer step, before
        clipping) and ``role/<role>/adapter_update`` (the update's weight change, L2) -- 0 for a frozen adapter;
        then forgets the update's sums. Empty for full weights."""
        if self.adapters is None:
            return {}
        groups, rates = self.optimizer.param_groups, self.scheduler.get_last_lr()
        rate = {group["adapter"]: lr for group, lr in zip(groups, rates, strict=True) if "adapter" in group}
        metrics = {}
        for role, name in self.adapters.adapters.items():
            metrics[f"role/{role}/lr"] = rate.get(name, 0.0)
            metrics[f"role/{role}/grad_norm"] = self.adapter_grad_norms.get(name, 0.0)
            metrics[f"role/{role}/adapter_update"] = self.adapter_updates.get(name, 0.0)
        self.adapter_updates = {}
        return metrics

    def _micro_batch_loss(
        self, batch: MicroBatch, data: MicroRows, counts: LossCounts
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """This micro-batch's share of the whole batch's loss, and its share of the metrics' sums."""
        algo = self.algorithm
        scores = response_scores(self.policy, batch, self.rollout.temperature, with_entropy=True)
        logprob = pad_rows(list(scores.logprobs.split(batch.response_lengths)))
        device = logprob.device
        mask, advantages = data.mask.to(device), data.advantages.to(device)
        old = data.old.to(device) if data.old is not None else logprob.detach()
        loss, stats = self.policy_loss(
            old,
            logprob,
            advantages,
            mask,
            clip_low=algo.clip_low,
            clip_high=algo.clip_high,
            dual_clip=algo.dual_clip,
            mode=algo.loss_mode,
            **counts.kwargs(),
        )
        token_mean = {"mode": "token-mean", "global_tokens": counts.global_tokens}
        token_entropy = pad_rows(list(scores.entropy.split(batch.response_lengths)))
        roles = (self.roles, data.roles.to(device), mask, old, logprob, advantages, token_entropy)
        role_shares = role_metrics.token_shares(
            *roles,
            data.role_tokens.tolist(),
            clip_low=algo.clip_low,
            clip_high=algo.clip_high,
            dual_clip=algo.dual_clip,
        )
        metrics = {
            "loss": loss.detach(),
            "clip_fraction": stats["clip_frac_high"] + stats["clip_frac_low"],
            "approx_kl": stats["approx_kl"],
            "entropy": aggregate(token_entropy.detach(), mask, **token_mean),
            **role_shares,
        }
        if algo.entropy_coef:
            loss = loss - algo.entropy_coef * aggregate(
                token_entropy, mask, algo.loss_mode, **counts.kwargs()
            )
        if data.ref is not None:
            per_token = kl(logprob, data.ref.to(device), algo.kl_kind)
            loss = loss + algo.kl_coef * aggregate(per_token, mask, algo.loss_mode, **counts.kwargs())
            metrics["kl"] = aggregate(per_token.detach(), mask, **token_mean)
        if self.critic is not None:
            value_loss = self._value_loss(batch, data, mask, counts)
            loss = loss + value_loss
            metrics["value_loss"] = value_loss.detach()
        return loss, metrics

    def _idle_pass(self, batch: MicroBatch) -> None:
        """A forward and backward that adds zero to every gradient: keeps a rank with fewer micro-batches in step
        with FSDP's per-pass collectives."""
        zero = response_logits(self.policy, batch).sum() * 0.0
        if self.critic is not None:
            zero = zero + response_values(self.critic, batch).sum() * 0.0
        zero.backward()

    def _value_loss(self, batch: MicroBatch, data: MicroRows, mask: Tensor, counts: LossCounts) -> Tensor:
        """PPO's clipped value loss, ``0.5 * max((V - R)^2, (clip(V, V_old +- c) - R)^2)``, token-mean."""
        values = pad_rows(list(response_values(self.critic, batch).split(batch.response_lengths)))
        old, returns = data.values.to(values.device), data.returns.to(values.device)
        clip = self.algorithm.value_clip
        clipped = old + (values - old).clamp(-clip, clip)
        per_token = 0.5 * torch.maximum((values - returns).square(), (clipped - returns).square())
        return aggregate(per_token, mask, "token-mean", global_tokens=counts.global_tokens)
