"""How a judge's verdict becomes a training reward: the typed adapter each judge that can reward training registers
beside its scorer (``JudgeSpec.reward`` in ``mara_bench.judges.registry``), so the trainer rewards with the judge's
own code and never switches on judge names.

* ``RuleReward`` -- a rule judge: its pure core (``mara_bench.judges.cores``, the function its Inspect scorer calls)
  turns a response and its golds into the reward, under the judge options it names.
* ``GraderReward`` -- an LLM judge: the grader request its scorer builds (the judge's prompt, strict parser and
  response schema) and the reward of a parsed verdict; it takes no options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inspect_ai.model import ResponseSchema


@dataclass(frozen=True)
class GraderRequest:
    """What an LLM judge asks its grader about one response: the prompt, the parser of its reply (``None`` for an
    unparsable reply) and the structured-output schema the grader is asked to follow, if any."""

    prompt: str
    parse: Callable[[str], Any]
    schema: ResponseSchema | None = None


def _no_values_to_check(options: Mapping[str, Any], where: str) -> None:
    """For a rule judge whose options need no check beyond their names."""


def _unknown_options(judge: str, allowed: frozenset[str], options: Mapping[str, Any], where: str) -> None:
    """Raise a ``ValueError`` naming ``where`` and the valid names for options ``judge`` does not take."""
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(
            f"{where} {unknown} do not apply to judge {judge!r}; valid: {sorted(allowed) or 'none'}"
        )


@dataclass(frozen=True)
class RuleReward:
    """A rule judge's reward: ``score(response, golds, options)``, the judge's pure core."""

    score: Callable[[str, str | Sequence[str], Mapping[str, Any]], float]
    options: frozenset[str] = frozenset()
    """The judge options the reward reads (e.g. ``lexical``'s ``variant`` and ``metric``)."""
    check_values: Callable[[Mapping[str, Any], str], None] = _no_values_to_check
    """``check_values(options, where)`` raises a ``ValueError`` naming ``where.<option>`` for a bad value."""

    def check_options(self, judge: str, options: Mapping[str, Any], where: str) -> None:
        """Raise a ``ValueError`` naming ``where`` (the caller's key, e.g. ``task.judge_options``) for an option
        the judge does not take or a bad value."""
        _unknown_options(judge, self.options, options, where)
        self.check_values(options, where)


@dataclass(frozen=True)
class GraderReward:
    """An LLM judge's reward: ``request(question, gold, response)`` for the grader, ``reward(verdict)`` of the
    verdict its parser read (1.0 for a correct one, else 0.0)."""

    request: Callable[[str, str, str], GraderRequest]
    reward: Callable[[Any], float]

    def check_options(self, judge: str, options: Mapping[str, Any], where: str) -> None:
        """Raise a ``ValueError`` naming ``where`` for any option: an LLM judge's reward takes none."""
        _unknown_options(judge, frozenset(), options, where)


JudgeReward = RuleReward | GraderReward
"""The reward adapter a judge registers."""
