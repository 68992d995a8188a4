"""The policy being trained, served as a harness ``Chat``, so rollouts run the same system code as evaluation.

``PolicyChat`` renders messages with the tokenizer's chat template and samples with the shared generation core
(``harness.providers.generation``, transformers on CPU or GPU), or with any other ``Generator`` of the same
contract -- the vLLM engine of ``trainer.vllm_rollout`` on a GPU. Calls made concurrently -- ``asyncio.gather``
over a group of episodes, or parallel agents inside one episode -- are batched into one generator call, each
row with its own sampling settings. Every ``Reply`` carries the prompt ids, the response ids (ending with the
end-of-turn token unless truncated) and their logprobs under the model's unmodified distribution.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.providers.generation import Completion, Sampling, generate, render_prompt
from harness.systems.types import Message, Reply

SAMPLING_FIELDS = tuple(f.name for f in dataclasses.fields(Sampling))

Generator = Callable[[list[list[int]], list[Sampling]], list[Completion]]
"""Completes each prompt (token ids) with its own ``Sampling``, in order (``harness.providers.generation``'s
contract: response ids with their logprobs under the unmodified model distribution)."""


@dataclass
class _Request:
    prompt_ids: list[int]
    sampling: Sampling
    future: asyncio.Future = field(repr=False)


class PolicyChat:
    """A ``Chat`` backed by a live policy model; concurrent calls are batched into one generate call.

    ``generator`` replaces transformers generation on ``model`` (e.g. a vLLM engine synced to the policy).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        defaults: Sampling | None = None,
        name: str = "policy",
        generator: Generator | None = None,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.generator = generator
        self.defaults = defaults or Sampling()
        self.name = name
        self._pending: list[_Request] = []
        self._flush: asyncio.Task | None = None

    def sampling(self, overrides: dict[str, Any]) -> Sampling:
        """The default sampling settings with a call's overrides applied; unknown settings are an error."""
        unknown = sorted(set(overrides) - set(SAMPLING_FIELDS))
        if unknown:
            raise ValueError(f"unknown sampling settings {unknown}; valid: {', '.join(SAMPLING_FIELDS)}")
        return dataclasses.replace(self.defaults, **overrides)

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        prompt_ids = render_prompt(self.tokenizer, messages)
        request = _Request(prompt_ids, self.sampling(sampling), asyncio.get_running_loop().create_future())
        self._pending.append(request)
        if self._flush is None:
            self._flush = asyncio.create_task(self._run_pending())
        completion: Completion = await request.future
        return Reply(
            text=completion.text,
            finish_reason=completion.finish_reason,
            input_tokens=len(prompt_ids),
            output_tokens=len(completion.response_ids),
            model=self.name,
            prompt_ids=prompt_ids,
            response_ids=completion.response_ids,
            logprobs=completion.logprobs,
        )

    async def _run_pending(self) -> None:
        await asyncio.sleep(0)  # let every coroutine that is ready enqueue its request first
        batch, self._pending, self._flush = self._pending, [], None
        prompts, settings = [r.prompt_ids for r in batch], [r.sampling for r in batch]
        try:
            if self.generator is not None:
                completions = self.generator(prompts, settings)
            else:
                completions = generate(self.model, self.tokenizer, prompts, settings)
        except Exception as err:  # every waiting call must hear about the failure
            for request in batch:
                request.future.set_exception(err)
            return
        for request, completion in zip(batch, completions, strict=True):
            request.future.set_result(completion)
