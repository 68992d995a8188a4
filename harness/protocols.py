"""Evaluation protocols: the papers' presets for sampling, epochs and reducers, judge and judge model, limits.

avg@k is ``k`` epochs reduced by the mean (metrics then average the per-sample means); pass@k is Inspect's unbiased
``pass_at(k)``; maj@k is ``majority_answer``: the judged value of the answer given most often across the epochs.
``-T protocol=`` picks a preset; ``-T epochs=``, ``-T reducers=`` and ``-T judge=`` override parts of it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from inspect_ai import Epochs
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score, ScoreReducer, mean_score, pass_at, score_reducer

from mara_bench.core.named import lookup
from mara_bench.judges.metrics import is_unscored


@score_reducer(name="maj_at_k")
def majority_answer() -> ScoreReducer:
    """maj@k: the value of the answer (``Score.answer``) given most often across epochs.

    Ties go to the answer that sorts first, so the result does not depend on epoch order; epochs without an
    extracted answer vote for "no answer"; unscored epochs (``mara_bench.judges.metrics.is_unscored``: the grader gave no
    verdict) do not vote (all unscored: unscored). The result keeps the winning epoch's metadata plus the tally.
    """

    def reduce(scores: list[Score]) -> Score:
        votes: dict[str, list[Score]] = defaultdict(list)
        for score in scores:
            if not is_unscored(score.value):
                votes[score.answer or ""].append(score)
        if not votes:  # keep the value's shape (a dict with judged_correct NaN) so metrics still read it
            return Score(value=scores[0].value, explanation="every epoch was unscored")
        winner = min(votes, key=lambda answer: (-len(votes[answer]), answer))
        chosen = votes[winner][0]
        tally = {answer: len(group) for answer, group in sorted(votes.items())}
        return Score(
            value=chosen.value,
            answer=chosen.answer,
            explanation=f"majority answer {winner!r} ({len(votes[winner])} of {len(scores)} epochs)",
            metadata={**(chosen.metadata or {}), "votes": tally},
        )

    return reduce


_REDUCER_PATTERN = re.compile(r"^(avg|mean|pass|maj)(?:@(\d+))?$")


def make_reducers(names: str | Sequence[str], epochs: int) -> list[ScoreReducer]:
    """Reducers from names like ``avg@32``, ``pass@1``, ``maj@8`` (``@k`` defaults to the epoch count).

    avg@k and maj@k reduce all epochs, so their ``k`` must equal ``epochs``; pass@k needs ``k <= epochs``.
    """
    items = [part.strip() for part in names.split(",")] if isinstance(names, str) else list(names)
    reducers: list[ScoreReducer] = []
    for name in filter(None, items):
        match = _REDUCER_PATTERN.match(name)
        if match is None:
            raise ValueError(f"unknown reducer {name!r}; valid reducers: avg@k (mean), pass@k, maj@k")
        kind, k = match.group(1), int(match.group(2) or epochs)
        if kind == "pass":
            if not 1 <= k <= epochs:
                raise ValueError(f"reducer {name!r} needs 1 <= k <= epochs ({epochs})")
            reducers.append(pass_at(k))
            continue
        if k != epochs:
            raise ValueError(f"reducer {name!r} reduces every epoch, so k must equal epochs ({epochs})")
        reducers.append(majority_answer() if kind == "maj" else mean_score())
    if not reducers:
        raise ValueError(f"reducers={names!r} names no reducer; valid reducers: avg@k (mean), pass@k, maj@k")
    return reducers


@dataclass(frozen=True)
class Protocol:
    """A named evaluation preset."""

    name: str
    description: str
    generate: GenerateConfig = field(default_factory=GenerateConfig)
    epochs: int = 1
    reducers: tuple[str, ...] = ("avg",)
    judge: str | None = None
    """Judge name; ``None`` uses the benchmark's default judge."""
    judge_options: Mapping[str, Any] = field(default_factory=dict)
    """Options of the protocol's judge, e.g. an LLM judge's ``timeout`` / ``attempts`` per grader call
    (``-T judge_timeout=`` overrides the timeout)."""
    judge_model: str | None = None
    """The paper's judge model, bound to the ``grader`` role unless ``--model-role grader=`` says otherwise."""
    system_settings: Mapping[str, int] = field(default_factory=dict)
    """The paper's turn/iteration bounds and loop settings, passed to systems that take an option of that name."""

    def epochs_spec(self) -> Epochs:
        return Epochs(self.epochs, make_reducers(self.reducers, self.epochs))

    def with_overrides(
        self, *, epochs: int | None = None, reducers: str | Sequence[str] | None = None
    ) -> Protocol:
        """This protocol with ``-T epochs=`` / ``-T reducers=`` applied; errors surface now, at task creation.

        With new epochs and no new reducers, avg@k and maj@k follow the new epoch count.
        """
        if epochs is not None and (isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1):
            raise ValueError(f"epochs={epochs!r} must be a positive integer")
        if reducers is not None:
            names = (
                tuple(p.strip() for p in reducers.split(","))
                if isinstance(reducers, str)
                else tuple(reducers)
            )
        elif epochs is not None:
            names = tuple(re.sub(r"^(avg|mean|maj)@\d+$", r"\1", name) for name in self.reducers)
        else:
            names = self.reducers
        updated = replace(self, epochs=epochs or self.epochs, reducers=names)
        updated.epochs_spec()
        return updated

    def summary(self) -> dict[str, Any]:
        """What the log records about the protocol."""
        return {
            "name": self.name,
            "epochs": self.epochs,
            "reducers": list(self.reducers),
            "generate": self.generate.model_dump(exclude_none=True),
            "system_settings": dict(self.system_settings),
        }


PROTOCOLS: dict[str, Protocol] = {
    protocol.name: protocol
    for protocol in (
        Protocol(
            name="default",
            description="One epoch with the model's own sampling settings and the benchmark's default judge.",
        ),
        Protocol(
            name="marsrl",
            description=(
                "MarsRL: avg@32 at T 0.6, top-p 0.95, 64k output tokens; math answer matching; "
                "V-C loop of at most 10 iterations, accepting after 4 consecutive passes."
            ),
            generate=GenerateConfig(temperature=0.6, top_p=0.95, max_tokens=65536),
            epochs=32,
            reducers=("avg@32",),
            judge="math",
            system_settings={"max_iterations": 10, "accept_after": 4},
        ),
        Protocol(
            name="mars",
            description=(
                "MARS: official HLE judge prompt with GPT-4o as judge; at most 10 System-2 turns; System 1 prompt "
                "<= 23,552 / response <= 8,192 tokens, System 2 response <= 28,672 tokens."
            ),
            judge="hle",
            judge_model="openai/gpt-4o",
            system_settings={
                "max_turns": 10,
                "sys1_budget": 23552,
                "s1_max_tokens": 8192,
                "s2_max_tokens": 28672,
            },
        ),
        Protocol(
            name="matpo",
            description="MATPO: avg@8 at T 1.0; SimpleQA grader with gpt-4o-mini as judge.",
            generate=GenerateConfig(temperature=1.0),
            epochs=8,
            reducers=("avg@8",),
            judge="simpleqa",
            judge_model="openai/gpt-4o-mini",
        ),
        Protocol(
            name="mask",
            description="M-ASK: lexical F1/EM with M-ASK's yes/no variant; at most 5 search iterations.",
            judge="lexical",
            judge_options={"variant": "mask"},
            system_settings={"max_iterations": 5},
        ),
        Protocol(
            name="quick",
            description="Smoke run: one greedy epoch with at most 512 new tokens; the benchmark's default judge.",
            generate=GenerateConfig(temperature=0.0, max_tokens=512),
        ),
    )
}


def get_protocol(name: str | None) -> Protocol:
    """The preset ``name`` (``None``: ``default``); unknown names raise listing the valid ones."""
    return lookup(PROTOCOLS, name or "default", "protocol")
