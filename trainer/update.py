"""The update step: one batch of rows becomes an optimizer step on the policy (and the critic).

Old logprobs are recomputed on micro-batches when ``ppo_epochs`` > 1 (with one epoch the policy being trained is
the one that sampled, so the training forward's own detached logprobs are the old ones, as TRL does), reference
logprobs and critic values likewise; advantages are assigned (the method's own, per question; else GRPO, or GAE
with the critic); the clipped-surrogate loss (+ KL, entropy, value loss) is accumulated over micro-batches with
GLOBAL token/row counts, gradients are summed across ranks and clipped, and AdamW steps -- unless the loss or the
gradient norm is non-finite, which skips the step.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.distributed.tensor import DTensor
from torch.nn.utils.rnn import pad_sequence

from trainer import role_metrics
from trainer.advantages import gae
from trainer.config import TrainConfig
from trainer.distributed import Distributed
from trainer.logprobs import response_scores
from trainer.losses import aggregate, kl, policy_loss
from trainer.mastered_tokens import mastered_positive_tokens
from trainer.methods import Method, group_advantages
from trainer.packing import MicroBatch, micro_batches, padding_share, response_logits, response_values
from trainer.samples import Sample
from trainer.scoring import group_norm


def rows(values: list[Tensor]) -> Tensor:
    """Right-pad 1-D per-row tensors into a ``(B, T)`` matrix."""
    return pad_sequence(values, batch_first=True)


class PolicyUpdate:
    """The models the update trains or reads, their AdamW optimizer and learning-rate schedule, and the entropy
    of the previous update (read by dynamic masking)."""

    def __init__(
        self,
        config: TrainConfig,
        dist: Distributed,
        method: Method,
        roles: list[str],
        policy: torch.nn.Module,
        reference: torch.nn.Module | None,
        critic: torch.nn.Module | None,
    ):
        self.config, self.dist, self.method, self.roles = config, dist, method, roles
        self.policy, self.reference, self.critic = policy, reference, critic
        self.trained = torch.nn.ModuleDict({"policy": policy})
        """The models the optimizer steps (its state is keyed by their parameter names)."""
        groups = [{"params": list(policy.parameters()), "lr": config.optim.lr}]
        if critic is not None:
            self.trained["critic"] = critic
            groups.append({"params": list(critic.parameters()), "lr": config.algorithm.critic_lr})
        self.optimizer = torch.optim.AdamW(
            groups, betas=config.optim.betas, weight_decay=config.optim.weight_decay
        )
        warmup = config.optim.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
        )
        self.last_entropy: float | None = None
        """The policy entropy of the previous update (token mean), read by dynamic masking."""

    @torch.no_grad()
    def _score_tokens(self, model: torch.nn.Module, batches: list[MicroBatch]) -> list[Tensor]:
        """Per-sample response-token logprobs under ``model`` (at the sampling temperature), batch order."""
        temperature = self.config.rollout.temperature
        scored = []
        with self.dist.gathered(model):
            for batch in batches:
                flat = response_scores(model, batch, temperature).logprobs
                scored += list(flat.split(batch.response_lengths))
        return scored

    def _advantages(
        self, samples: list[Sample], order: list[int], values: list[Tensor] | None
    ) -> tuple[list[Tensor], list[Tensor] | None]:
        """Per-sample token advantages in ``order`` (GRPO scalars broadcast, or the method's own advantages --
        scalars or per-token values -- on each row's mask; GAE over the masked tokens), and the GAE returns the
        critic regresses on (None for GRPO)."""
        algo = self.config.algorithm
        masks = [torch.tensor(samples[i].loss_mask, dtype=torch.float32) for i in order]
        if values is None:
            if self.method.advantages is None:
                scalars = group_advantages([samples[i] for i in order], group_norm(self.config.algorithm))
                for i, scalar in zip(order, scalars.tolist(), strict=True):
                    samples[i].advantage = scalar
            advantages = [torch.as_tensor(samples[i].advantage, dtype=torch.float32) for i in order]
            return [advantage * mask for advantage, mask in zip(advantages, masks, strict=True)], None
        mask = rows(masks)
        last = (mask * torch.arange(1, mask.shape[1] + 1)).argmax(dim=1)
        token_rewards = torch.zeros_like(mask)
        token_rewards[torch.arange(len(order)), last] = torch.tensor([samples[i].reward for i in order])
        advantages, returns = gae(token_rewards, rows(values).cpu(), mask, gamma=algo.gamma, lam=algo.lam)
        for j, i in enumerate(order):
            samples[i].advantage = advantages[j, : len(masks[j])].tolist()
        per_row = [advantages[j, : len(m)] for j, m in enumerate(masks)]
        return per_row, [returns[j, : len(m)] for j, m in enumerate(masks)]

    def _masks_mastered_tokens(self) -> bool:
        """MarsRL/UloRL's dynamic masking is on and the entropy of the previous update fell below its target."""
        target = self.config.algorithm.mpt_target_entropy
        return target is not None and self.last_entropy is not None and self.last_entropy < target

    def __call__(self, samples: list[Sample], step: int) -> dict[str, float]:
        """Update the policy (and critic) on ``samples``; the step's metrics (``skipped`` = 1 when no update was
        made). Sets the rows' GRPO / GAE advantages in place."""
        config, algo = self.config, self.config.algorithm
        batches = micro_batches(
            samples, config.optim.token_budget, config.optim.batching, config.optim.max_padding
        )
        order = [row for batch in batches for row in batch.rows]
        old = None  # one optimizer step on the policy that sampled: its logprobs ARE the old ones (detached)
        if algo.ppo_epochs > 1:
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
        advantages, returns = self._advantages(samples, order, values)
        masks = [torch.tensor(samples[row].loss_mask, dtype=torch.bool) for row in order]
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
        row_roles = torch.tensor([index.get(samples[row].role, -1) for row in order], dtype=torch.long)
        role_tokens = self.dist.sum(role_metrics.role_tokens([samples[row] for row in order], self.roles))
        local_counts = [sum(int(m.sum()) for m in masks), sum(int(m.any()) for m in masks)]
        tokens, active_rows = (int(x) for x in self.dist.sum(local_counts))
        if tokens == 0:
            return {"skipped": 1.0}
        norm_length = algo.norm_length if algo.norm_length is not None else config.rollout.max_tokens
        counts = {"global_tokens": tokens, "global_rows": active_rows, "norm_length": norm_length}
        parameters = [p for group in self.optimizer.param_groups for p in group["params"]]
        self.policy.train()
        # FSDP: every rank must make the same number of forward/backward passes
        idle = self.dist.most(len(batches)) - len(batches) if self.dist.sharded else 0
        sums: dict[str, float] = {}
        for epoch in range(algo.ppo_epochs):
            start, finite = 0, True
            for _ in range(idle):
                self._idle_pass(batches[0])
            for batch in batches:
                part = slice(start, start + len(batch.rows))
                start += len(batch.rows)
                data = {
                    "row_roles": row_roles[part],
                    "role_tokens": torch.tensor(role_tokens),
                    "mask": rows(masks[part]),
                    "old": rows(old[part]) if old is not None else None,
                    "advantages": rows(advantages[part]),
                    "ref": rows(ref[part]) if ref is not None else None,
                    "values": rows(values[part]) if values is not None else None,
                    "returns": rows(returns[part]) if returns is not None else None,
                }
                loss, stats = self._micro_batch_loss(batch, data, counts)
                finite = finite and bool(torch.isfinite(loss))
                loss.backward()  # even when non-finite: the step is dropped below, after every rank's passes
                if epoch == 0:
                    for name, value in stats.items():
                        sums[name] = sums.get(name, 0.0) + float(value)
            if self.dist.sum([0.0 if finite else 1.0])[0] > 0:
                self.optimizer.zero_grad(set_to_none=True)
                print(f"step {step}: non-finite loss; step skipped")
                return {"skipped": 1.0}
            self.dist.sum_gradients(parameters)
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, config.optim.grad_clip)
            if isinstance(grad_norm, DTensor):
                grad_norm = grad_norm.full_tensor()
            if not torch.isfinite(grad_norm):
                self.optimizer.zero_grad(set_to_none=True)
                print(f"step {step}: non-finite gradient norm; step skipped")
                return {"skipped": 1.0}
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            if epoch == 0:
                sums["grad_norm"] = float(grad_norm)
        self.scheduler.step()
        reduced = dict(zip(sums, self.dist.sum(list(sums.values())), strict=True))
        reduced["grad_norm"] = sums["grad_norm"]
        adv = torch.cat([a[m] for a, m in zip(advantages, masks, strict=True)])
        self.last_entropy = reduced["entropy"]
        return {
            **reduced,
            "mastered_tokens_masked": self.dist.sum([mastered])[0],
            "skipped": 0.0,
            "advantage_mean": float(adv.mean()) if adv.numel() else 0.0,
            "advantage_std": float(adv.std()) if adv.numel() > 1 else 0.0,
            "response_length": sum(len(s.response_ids) for s in samples) / len(samples),
            "micro_batches": float(len(batches)),
            "padding_share": padding_share(batches),
        }

    def _micro_batch_loss(
        self, batch: MicroBatch, data: dict[str, Tensor | None], counts: dict[str, int]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """This micro-batch's share of the whole batch's loss, and its share of the metrics' sums."""
        algo = self.config.algorithm
        scores = response_scores(self.policy, batch, self.config.rollout.temperature, with_entropy=True)
        logprob = rows(list(scores.logprobs.split(batch.response_lengths)))
        device = logprob.device
        mask, advantages = data["mask"].to(device), data["advantages"].to(device)
        old = data["old"].to(device) if data["old"] is not None else logprob.detach()
        loss, stats = policy_loss(
            old,
            logprob,
            advantages,
            mask,
            clip_low=algo.clip_low,
            clip_high=algo.clip_high,
            dual_clip=algo.dual_clip,
            mode=algo.loss_mode,
            **counts,
        )
        token_mean = {"mode": "token-mean", "global_tokens": counts["global_tokens"]}
        token_entropy = rows(list(scores.entropy.split(batch.response_lengths)))
        roles = (self.roles, data["row_roles"].to(device), mask, old, logprob, advantages, token_entropy)
        role_shares = role_metrics.token_shares(
            *roles,
            data["role_tokens"].tolist(),
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
            loss = loss - algo.entropy_coef * aggregate(token_entropy, mask, algo.loss_mode, **counts)
        if data["ref"] is not None:
            per_token = kl(logprob, data["ref"].to(device), algo.kl_kind)
            loss = loss + algo.kl_coef * aggregate(per_token, mask, algo.loss_mode, **counts)
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

    def _value_loss(
        self, batch: MicroBatch, data: dict[str, Tensor | None], mask: Tensor, counts: dict[str, int]
    ) -> Tensor:
        """PPO's clipped value loss, ``0.5 * max((V - R)^2, (clip(V, V_old +- c) - R)^2)``, token-mean."""
        values = rows(list(response_values(self.critic, batch).split(batch.response_lengths)))
        old, returns = data["values"].to(values.device), data["returns"].to(values.device)
        clip = self.config.algorithm.value_clip
        clipped = old + (values - old).clamp(-clip, clip)
        per_token = 0.5 * torch.maximum((values - returns).square(), (clipped - returns).square())
        return aggregate(per_token, mask, "token-mean", global_tokens=counts["global_tokens"])
