"""The RL training loop. One ``Trainer.train_step`` reads top to bottom:

1. rollout  -- each question's group of episodes runs through the harness system (the evaluation code) with the
   live policy as its ``Chat`` (transformers generation, or a vLLM engine synced to the policy on a GPU), or
   through the method's own rollout when it has one (MarsRL's grouped rollouts, over the same system steps);
2. scoring  -- the task rewards each episode; its calls become samples (``trainer.samples``); a non-finite reward
   skips the step, reported;
3. update   -- old logprobs are recomputed on micro-batches when ``ppo_epochs`` > 1 (with one epoch the
   policy being trained is the one that sampled, so the training forward's own detached logprobs are the old
   ones, as TRL does), reference logprobs and critic values likewise; advantages are assigned (the method's
   own, per question; else GRPO, or GAE with the critic); the clipped-surrogate loss (+ KL, entropy, value loss)
   is accumulated over micro-batches with GLOBAL token/row counts, gradients are summed across ranks and
   clipped, and AdamW steps -- unless the loss or the gradient norm is non-finite, which skips the step.

Sampling is reseeded from ``(seed, step, rank)`` at the start of every step, so a resumed run draws exactly what
an uninterrupted one would.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.distributed.tensor import DTensor
from torch.nn.utils.rnn import pad_sequence
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

from harness.providers.generation import Sampling
from harness.systems import build_toolbox, get_system, run_system
from harness.systems.types import Episode, Toolbox
from trainer import role_metrics
from trainer.advantages import gae
from trainer.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint, set_rng_state
from trainer.config import TaskConfig, TrainConfig, to_dict
from trainer.distributed import Distributed
from trainer.logprobs import response_scores
from trainer.losses import aggregate, kl, policy_loss
from trainer.mastered_tokens import mastered_positive_tokens
from trainer.methods import GroupNorm, concatenate, get_method, group_advantages
from trainer.packing import (
    MicroBatch,
    micro_batches,
    padding_share,
    response_logits,
    response_values,
)
from trainer.policy import PolicyChat
from trainer.samples import Sample
from trainer.step_record import (
    ROLLOUTS_DIR,
    drop_zero_variance,
    group_rewards,
    keep_rows,
    split_rows,
    write_rollouts,
    zero_variance_keys,
)
from trainer.vllm_rollout import rollout_backend


class PromptOrder:
    """Question indices in a fresh shuffled order each epoch; ``(epoch, position)`` is the data cursor."""

    def __init__(self, size: int, seed: int):
        if size < 1:
            raise ValueError("the task has no questions to train on")
        self.size, self.seed, self.epoch, self.position = size, seed, 0, 0

    def take(self, count: int) -> list[int]:
        taken: list[int] = []
        while len(taken) < count:
            order = list(range(self.size))
            random.Random(self.seed * 1_000_003 + self.epoch).shuffle(order)
            chunk = order[self.position : self.position + count - len(taken)]
            taken += chunk
            self.position += len(chunk)
            if self.position == self.size:
                self.epoch, self.position = self.epoch + 1, 0
        return taken

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position = state["epoch"], state["position"]


def load_task(factory: str, args: dict[str, Any]) -> Any:
    """Call the ``module:function`` task factory named in the config."""
    module_name, _, function = factory.partition(":")
    if not function:
        raise ValueError(f"task.factory must look like 'module:function', got {factory!r}")
    return getattr(importlib.import_module(module_name), function)(**args)


def training_task(task: TaskConfig) -> Any:
    """The recipe's task: a harness benchmark judged by its judge (``task.benchmark``), else the factory's."""
    if task.benchmark is None:
        return load_task(task.factory, task.args)
    from trainer.benchmark_task import benchmark_task

    return benchmark_task(
        task.benchmark,
        judge=task.judge,
        data=task.data,
        split=task.split,
        limit=task.limit,
        judge_options=task.judge_options,
        grader=task.grader,
    )


def seed_step(seed: int, step: int, rank: int) -> None:
    """Seed python, numpy and torch for one step of one rank."""
    value = (seed * 1_000_003 + step) * 1_009 + rank
    random.seed(value)
    np.random.seed(value % 2**32)
    torch.manual_seed(value)


def rows(values: list[Tensor]) -> Tensor:
    """Right-pad 1-D per-row tensors into a ``(B, T)`` matrix."""
    return pad_sequence(values, batch_first=True)


class Trainer:
    """Policy, optional reference and critic, optimizer and data cursor for one run directory."""

    def __init__(self, config: TrainConfig, run_dir: str | Path, *, resume: bool = False):
        self.config = config
        self.run_dir = Path(run_dir)
        self.dist = Distributed.from_env(config.parallel)
        self.method = get_method(config.algorithm.method).configured(config)
        if self.method.estimator not in (None, config.algorithm.advantage):
            raise ValueError(
                f"algorithm.method {self.method.name!r} needs algorithm.advantage {self.method.estimator!r}, "
                f"got {config.algorithm.advantage!r}"
            )
        self.device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
        model_path = self._model_path()
        dtype = config.model.torch_dtype(cuda=self.device is not None)
        algo = config.algorithm
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.policy = self._load(AutoModelForCausalLM, model_path, dtype)
        self.reference = None
        if algo.kl_coef > 0:
            self.reference = self._load(AutoModelForCausalLM, model_path, dtype).requires_grad_(False).eval()
        self.critic = None
        if algo.advantage == "gae":
            self.critic = self._load(AutoModelForTokenClassification, model_path, dtype, num_labels=1)
        elif algo.advantage != "grpo":
            raise ValueError(f"algorithm.advantage must be 'grpo' or 'gae', got {algo.advantage!r}")
        self.trained = torch.nn.ModuleDict({"policy": self.policy})
        """The models the optimizer steps (its state is keyed by their parameter names)."""
        if self.critic is not None:
            self.trained["critic"] = self.critic
        groups = [{"params": list(self.policy.parameters()), "lr": config.optim.lr}]
        if self.critic is not None:
            groups.append({"params": list(self.critic.parameters()), "lr": algo.critic_lr})
        self.optimizer = torch.optim.AdamW(
            groups, betas=config.optim.betas, weight_decay=config.optim.weight_decay
        )
        warmup = config.optim.warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
        )
        if config.rollout.prompts_per_step < self.dist.world_size:
            raise ValueError(
                f"rollout.prompts_per_step ({config.rollout.prompts_per_step}) must be at least the number of "
                f"ranks ({self.dist.world_size}): every rank rolls out its own questions"
            )
        self.task = training_task(config.task)
        self.system = get_system(config.task.system)
        self.system_options, tool_settings = self.system.split_options(config.task.system_options)
        self.roles = list(self.system.roles)
        """The system's own role names: the ``role/<role>/...`` metrics of every step, in this order."""
        self.toolbox = self._toolbox(tool_settings)
        self.own_rollout = self.method.rollout(config) if self.method.rollout is not None else None
        self.prompts = PromptOrder(len(self.task.items), config.seed)
        rollout = config.rollout
        sampling = Sampling(
            max_tokens=rollout.max_tokens, temperature=rollout.temperature, top_p=rollout.top_p
        )
        self.vllm = None
        if rollout_backend(rollout.backend) == "vllm":
            from trainer.vllm_rollout import VLLMGenerator

            self.vllm = VLLMGenerator(
                model_path,
                dtype=str(dtype).removeprefix("torch."),
                seed=config.seed * 1_009 + self.dist.rank,
                gpu_memory_utilization=rollout.vllm_gpu_memory,
            )
        self.chat = PolicyChat(
            self.policy,
            self.tokenizer,
            defaults=sampling,
            generator=self.vllm,
            scheduler="static" if self.vllm is not None else rollout.scheduler,
        )
        self.step = 0
        self.last_samples: list[Sample] = []
        """The rows the last step trained on, with their rewards and advantages (for tests and inspection)."""
        self.last_entropy: float | None = None
        """The policy entropy of the previous update (token mean), read by dynamic masking."""
        self.pipeline = None
        """MarsRL's pipelined / segmented rollouts (``trainer.pipelined``) when the recipe asks for them."""
        if config.algorithm.marsrl.pipeline or config.rollout.segment_tokens is not None:
            from trainer.pipelined import Pipeline

            self.pipeline = Pipeline(self)
        if resume:
            self.resume()

    # ---- set-up -------------------------------------------------------------------------------------------

    def _model_path(self) -> Path | str:
        if self.config.model.path:
            return self.config.model.path
        path = self.run_dir / "base-model"
        if self.dist.is_main and not (path / "config.json").exists():
            from harness.tinymodel import build_tiny_model

            model = self.config.model
            build_tiny_model(
                path, arch=model.tiny_arch, seed=self.config.seed, hidden_size=model.tiny_hidden_size
            )
        self.dist.barrier()
        return path

    def _toolbox(self, tool_settings: dict[str, Any]) -> Toolbox:
        """The task's own toolbox when it has one (an offline corpus, say), else the system's tools as configured."""
        own = getattr(self.task, "toolbox", None)
        if own is None:
            return build_toolbox(self.system, tool_settings)
        if tool_settings:
            raise ValueError(
                f"the task provides its own toolbox; remove the tool settings {sorted(tool_settings)} from "
                "task.system_options"
            )
        return own

    def _load(self, cls: Any, path: Path | str, dtype: torch.dtype, **kwargs: Any) -> torch.nn.Module:
        """Load a model onto this rank's device, sharded when the run is FSDP."""
        model = cls.from_pretrained(path, dtype=dtype, **kwargs)
        return self.dist.prepare(model.to(self.device) if self.device is not None else model)

    # ---- one step -----------------------------------------------------------------------------------------

    def train_step(self) -> dict[str, float]:
        """Run one rollout-and-update step; returns its metrics (``skipped`` = 1 when no update was made)."""
        if self.pipeline is not None:  # rollout runs beside training: the step takes what has been released
            return self.pipeline.train_step()
        seed_step(self.config.seed, self.step, self.dist.rank)
        started = time.perf_counter()
        indices = self.prompts.take(self.config.rollout.prompts_per_step)
        items = [self.task.items[i] for i in self.dist.shard(indices)]
        self.policy.eval()
        with self.dist.gathered(self.policy):
            if self.vllm is not None:
                self.vllm.sync(self.policy.named_parameters())
            episodes, unscored = asyncio.run(self._rollout(items))
        rolled = time.perf_counter()
        groups = self._score(items, episodes)
        scored = time.perf_counter()
        metrics = self._reward_metrics(concatenate(groups))
        metrics.update(self._episode_metrics(items, episodes, unscored, groups))
        if self.config.algorithm.filter_zero_variance:
            groups = [drop_zero_variance(group) for group in groups]
        bad = [s.group_key for group in groups for s in group if not math.isfinite(s.reward)]
        finite = self.dist.sum([len(bad)])[0] == 0
        if finite and self.method.advantages is not None:
            norm = self._group_norm()  # a question whose every episode went unscored has no rows
            groups = [self.method.advantages(group, norm) if group else group for group in groups]
        groups = [keep_rows(group, self._trains) for group in groups]
        samples = concatenate(groups)
        if finite:
            metrics.update(self._update(samples))  # sets the rows' GRPO / GAE advantages in place
        else:
            metrics.update(skipped=1.0)
            print(f"step {self.step}: non-finite reward for questions {sorted(set(bad))}; step skipped")
        self.last_samples = samples
        role_sums = self.dist.sum(role_metrics.sample_sums(samples, self.roles))
        metrics.update(role_metrics.sample_metrics(role_sums, self.roles))
        finished = time.perf_counter()
        tokens = self.dist.sum([sum(len(s.input_ids) for s in samples)])[0]
        metrics.update(
            step=float(self.step),
            tokens=tokens,
            tokens_per_s=tokens / (finished - started),
            time_rollout=rolled - started,
            time_scoring=scored - rolled,
            time_update=finished - scored,
            time_step=finished - started,
            lr=self.scheduler.get_last_lr()[0],
        )
        self._dump(items, episodes, unscored, split_rows(samples, [len(group) for group in groups]))
        self.step += 1
        return metrics

    def _trains(self, sample: Sample) -> bool:
        """Whether the row's agent is trained (``algorithm.marsrl.train_agents``; every agent otherwise)."""
        agents = self.config.algorithm.marsrl.train_agents
        return agents is None or sample.role in agents

    def _dump(
        self,
        items: list[dict[str, Any]],
        episodes: list[list[Episode]],
        unscored: list[int],
        groups: list[list[Sample]],
    ) -> None:
        """``rollouts/step_N.jsonl`` (``step_N.rank<r>.jsonl`` on other ranks): what this step trained on."""
        suffix = "" if self.dist.is_main else f".rank{self.dist.rank}"
        path = self.run_dir / ROLLOUTS_DIR / f"step_{self.step}{suffix}.jsonl"
        write_rollouts(path, self.step, items, episodes, groups, unscored)

    async def _rollout(self, items: list[dict[str, Any]]) -> tuple[list[list[Episode]], list[int]]:
        """Each question's group of episodes, and how many episodes of it the task's judge left unscored
        (dropped from the group: an unscored judgement is never a reward of 0)."""
        if self.own_rollout is not None:  # one generator per question, drawn in order from the step's seed
            rngs = [random.Random(random.getrandbits(64)) for _ in items]
            groups = [self.own_rollout(item, self.chat, rng) for item, rng in zip(items, rngs, strict=True)]
            return list(await asyncio.gather(*groups)), [0] * len(items)
        size = self.config.rollout.group_size
        grade = getattr(self.task, "grade", None)

        async def judged(item: dict[str, Any]) -> tuple[Episode, bool]:
            question, options = self.run_input(item)
            episode = await run_system(self.system.name, question, self.chat, self.toolbox, **options)
            return episode, grade is None or await grade(item, episode) is not None

        runs = await asyncio.gather(*[judged(item) for item in items for _ in range(size)])
        groups = [runs[i * size : (i + 1) * size] for i in range(len(items))]
        return (
            [[episode for episode, scored in group if scored] for group in groups],
            [sum(not scored for _, scored in group) for group in groups],
        )

    def run_input(self, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The user message and system options of one question's runs: the item's question and the recipe's
        options, or, for a benchmark task, both as its evaluation task builds them (user template, instruction)."""
        own = getattr(self.task, "run_input", None)
        if own is None:
            return item["question"], self.system_options
        return own(item, self.system.name, self.system_options)

    def _episode_metrics(
        self,
        items: list[dict[str, Any]],
        episodes: list[list[Episode]],
        unscored: list[int],
        groups: list[list[Sample]],
    ) -> dict[str, float]:
        """Tool calls per episode, unscored judgements, the share of zero-variance groups, and the method's own
        metrics, summed over ranks."""
        ratios = {
            "tool_calls_per_episode": (
                float(sum(len(e.tool_calls) for group in episodes for e in group)),
                float(sum(map(len, episodes))),
            ),
            "groups_zero_variance_frac": (
                float(sum(len(zero_variance_keys(group)) for group in groups)),
                float(sum(len(group_rewards(group)) for group in groups)),
            ),
        }
        if self.method.metrics is not None:
            ratios.update(self.method.metrics(items, episodes))
        names = sorted(ratios)
        summed = self.dist.sum([part for name in names for part in ratios[name]] + [float(sum(unscored))])
        metrics = {"unscored": summed[-1]}
        for index, name in enumerate(names):
            numerator, denominator = summed[2 * index : 2 * index + 2]
            if denominator:
                metrics[name] = numerator / denominator
        return metrics

    def _score(self, items: list[dict[str, Any]], episodes: list[list[Episode]]) -> list[list[Sample]]:
        """Each question's rewarded samples, as the method makes them (parents local to each question's list)."""
        return [
            self.method.rewarded_samples(item, group, self.task, self.tokenizer)
            for item, group in zip(items, episodes, strict=True)
        ]

    def _group_norm(self) -> GroupNorm:
        algo = self.config.algorithm
        return GroupNorm(
            eps=algo.grpo_eps, unbiased=algo.grpo_unbiased_std, normalize_std=algo.grpo_normalize_std
        )

    def _reward_metrics(self, samples: list[Sample]) -> dict[str, float]:
        finite = [s.reward for s in samples if math.isfinite(s.reward)]
        count, total, squares = self.dist.sum([len(finite), sum(finite), sum(r * r for r in finite)])
        mean = total / max(count, 1)
        return {"reward_mean": mean, "reward_std": math.sqrt(max(squares / max(count, 1) - mean * mean, 0.0))}

    # ---- update -------------------------------------------------------------------------------------------

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
                scalars = group_advantages([samples[i] for i in order], self._group_norm())
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

    def _update(self, samples: list[Sample], *, behaviour: bool = False) -> dict[str, float]:
        """One update on ``samples``; with ``behaviour`` their ``old_logprobs`` are the (older) sampling policy's
        own and take the importance ratios' denominators (pipelined rollouts)."""
        config, algo = self.config, self.config.algorithm
        batches = micro_batches(
            samples, config.optim.token_budget, config.optim.batching, config.optim.max_padding
        )
        order = [row for batch in batches for row in batch.rows]
        old = None  # one optimizer step on the policy that sampled: its logprobs ARE the old ones (detached)
        if behaviour:
            old = [torch.tensor(samples[row].old_logprobs, dtype=torch.float32) for row in order]
        elif algo.ppo_epochs > 1:
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
                print(f"step {self.step}: non-finite loss; step skipped")
                return {"skipped": 1.0}
            self.dist.sum_gradients(parameters)
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, config.optim.grad_clip)
            if isinstance(grad_norm, DTensor):
                grad_norm = grad_norm.full_tensor()
            if not torch.isfinite(grad_norm):
                self.optimizer.zero_grad(set_to_none=True)
                print(f"step {self.step}: non-finite gradient norm; step skipped")
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

    # ---- checkpoints --------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Whole (unsharded) states; a collective when FSDP-sharded, so every rank calls it."""
        return {
            "model": self.dist.model_state(self.policy),
            "critic": self.dist.model_state(self.critic) if self.critic is not None else None,
            "optimizer": self.dist.optimizer_state(self.trained, self.optimizer),
            "scheduler": self.scheduler.state_dict(),
            "prompts": self.prompts.state_dict(),
            "last_entropy": self.last_entropy,
            "config": to_dict(self.config),
        }

    def save(self) -> None:
        """Checkpoint and export the current step (every rank gathers the state; rank 0 writes)."""
        state = self.state_dict()
        if self.dist.is_main:
            save_checkpoint(
                self.run_dir,
                self.step,
                state,
                export=lambda directory: self.export(directory, state["model"]),
            )
        self.dist.barrier()

    def export(self, directory: Path, model_state: dict[str, Tensor]) -> None:
        """Write the policy (``model_state``, whole) and tokenizer in HF format (what ``local/`` loads)."""
        self.policy.save_pretrained(directory, state_dict=model_state)
        self.tokenizer.save_pretrained(directory)

    def resume(self) -> bool:
        """Load the latest checkpoint of the run directory; False when there is none."""
        path = latest_checkpoint(self.run_dir)
        if path is None:
            return False
        state = load_checkpoint(path)
        self.dist.load_model_state(self.policy, state["model"])
        if self.critic is not None and state["critic"] is not None:
            self.dist.load_model_state(self.critic, state["critic"])
        self.dist.load_optimizer_state(self.trained, self.optimizer, state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.prompts.load_state_dict(state["prompts"])
        self.last_entropy = state.get("last_entropy")
        set_rng_state(state["rng"])
        self.step = state["step"]
        return True
