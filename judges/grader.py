"""Asking the grader model: the ``grader`` role, the reply cache, bounded calls and retries, the unscored outcome.

The grader is whatever model is bound to the ``grader`` role (``--model-role grader=<model>`` or
``eval(..., model_roles={"grader": ...})``); without one an LLM judge raises ``GraderMissingError`` — the evaluated
model never grades itself. Replies that gave a verdict are cached (``mara_bench.judges.reply_cache``, keyed by the judge, the
grader model and the prompt), so re-scoring a log replays the same judgements for free; a reply that gave none is
never cached, so a later run asks again. Each call is bounded: it is abandoned after ``timeout`` seconds, Inspect
retries a failing transport at most ``TRANSPORT_RETRIES`` times within that bound, and an unparsable, failed or
timed-out call is retried with a fresh call up to ``attempts`` calls in all. After the last one the outcome has no
verdict, which scorers record as *unscored*: a hanging grader never hangs the eval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
from inspect_ai.model import (
    CachePolicy,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ResponseSchema,
    get_model,
    model_roles,
)

from mara_bench.judges.reply_cache import ReplyCache

GRADER_ROLE = "grader"
SECOND_GRADER_ROLE = "grader2"
"""The role of a second grader that re-judges every sample (judge agreement, judge-sensitive regressions)."""
DEFAULT_ATTEMPTS = 3
DEFAULT_TIMEOUT_S = 180.0
"""Per grader call: long enough for a reasoning grader (o3-mini) on a long response, short of a hung connection."""
TRANSPORT_RETRIES = 2
Verdict = TypeVar("Verdict")


class GraderMissingError(RuntimeError):
    """An LLM judge was asked to score with no model bound to the ``grader`` role."""


def missing_grader_message(judge_name: str, role: str = GRADER_ROLE) -> str:
    return (
        f"The '{judge_name}' judge needs a grader model, and no model is bound to the '{role}' role. "
        f"Pass --model-role {role}=<model> to `inspect eval` / `inspect score` (in Python: "
        f"eval(..., model_roles={{'{role}': <model>}})). The evaluated model is never used to grade itself."
    )


def ensure_grader_bound(
    judge_name: str, task_roles: Mapping[str, Any] | None = None, role: str = GRADER_ROLE
) -> None:
    """Raise ``GraderMissingError`` unless the eval (or ``task_roles``) binds a model to ``role``."""
    if role in model_roles() or (task_roles is not None and role in task_roles):
        return
    raise GraderMissingError(missing_grader_message(judge_name, role))


def grader_model(judge_name: str, role: str = GRADER_ROLE) -> Model:
    """The model bound to ``role`` (``GraderMissingError`` when there is none)."""
    ensure_grader_bound(judge_name, role=role)
    return get_model(role=role, required=True)


@dataclass(frozen=True)
class GraderOutcome(Generic[Verdict]):
    """What the grader said: the parsed verdict (None when unscored), its raw replies, and why it failed."""

    grader: str
    verdict: Verdict | None
    replies: list[str] = field(default_factory=list)
    failure: str | None = None

    def details(self) -> dict[str, Any]:
        """The outcome as score metadata."""
        return {"grader": self.grader, "grader_replies": self.replies, "grader_failure": self.failure}


async def ask_grader(
    judge_name: str,
    prompt: str,
    parse: Callable[[str], Verdict | None],
    *,
    schema: ResponseSchema | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    cache: bool | CachePolicy = True,
    timeout: float = DEFAULT_TIMEOUT_S,
    model: Model | None = None,
    role: str = GRADER_ROLE,
) -> GraderOutcome[Verdict]:
    """Ask the grader ``prompt`` until ``parse`` reads a verdict from its reply: at most ``attempts`` calls of at
    most ``timeout`` seconds each (a cached verdict-giving reply is used without a call).

    ``model`` is the grader; ``None`` means the model bound to ``role`` (an evaluation's judge: ``grader``, or
    ``grader2`` for a second judge).
    """
    check_bounds(attempts, timeout)
    model = model if model is not None else grader_model(judge_name, role)
    grader = str(model)
    store = ReplyCache.from_option(cache, judge_name, grader)
    cached = store.get(prompt, schema) if store else None
    verdict = parse(cached) if cached is not None else None
    if verdict is not None:
        return GraderOutcome(grader=grader, verdict=verdict, replies=[cached])
    config = GenerateConfig(response_schema=schema, max_retries=TRANSPORT_RETRIES, timeout=math.ceil(timeout))
    replies: list[str] = []
    failure: str | None = None
    for attempt in range(attempts):
        try:
            with anyio.fail_after(timeout):
                output = await model.generate([ChatMessageUser(content=prompt)], config=config)
        except TimeoutError:
            failure = f"grader call timed out after {timeout:g} s (attempt {attempt + 1} of {attempts})"
            continue
        except Exception as error:  # the call failed after Inspect's own retries: unscored, never a crash
            failure = f"grader call failed: {type(error).__name__}: {error}"
            continue
        replies.append(output.completion)
        verdict = parse(output.completion)
        if verdict is not None:
            if store:
                store.put(prompt, schema, output.completion)
            return GraderOutcome(grader=grader, verdict=verdict, replies=replies)
        failure = f"unparsable grader reply after {attempt + 1} attempt(s)"
    return GraderOutcome(grader=grader, verdict=None, replies=replies, failure=failure)


def check_bounds(attempts: int, timeout: float) -> None:
    """Raise ``ValueError`` unless ``attempts`` >= 1 and ``timeout`` > 0 (checked when a scorer is built)."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"judge attempts must be an integer >= 1, got {attempts!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise ValueError(f"judge timeout must be a positive number of seconds, got {timeout!r}")
