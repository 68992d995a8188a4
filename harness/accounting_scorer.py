"""The registered ``accounting`` scorer: Inspect finds the metrics of the score the system solver writes
(``mara_bench.harness.accounting.record_account``) by this scorer's name; run as a scorer (``inspect score``), it
counts a sample's stored Episode with its system's roles and tools. It reads the systems, so it sits above them,
while the counting it reports (``mara_bench.harness.accounting``) sits below; the systems load only when it scores,
so registering it (the Inspect entry point) loads none of them.
"""

from __future__ import annotations

import math

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from mara_bench.core.inspect_compat import register_bare_name
from mara_bench.harness.accounting import (
    ACCOUNTING_SCORE,
    account,
    account_keys,
    default_prices,
    per_attempt_means_and_totals,
)


@register_bare_name
@scorer(metrics=[per_attempt_means_and_totals()], name=ACCOUNTING_SCORE)
def accounting() -> Scorer:
    """The metrics of the ``accounting`` score (Inspect finds a solver-written score's metrics by the score's name);
    as a scorer, it counts a sample's stored Episode with its system's roles and tools (NaN without an Episode)."""

    async def score(state: TaskState, target: Target) -> Score:  # noqa: ARG001
        from mara_bench.harness.systems import get_system
        from mara_bench.harness.systems.inspect_adapter import stored_episode

        episode = stored_episode(state.store)
        if episode is None:
            return Score(
                value=dict.fromkeys(account_keys((), ()), math.nan), explanation="no episode recorded"
            )
        spec = get_system(episode.system)
        return Score(value=account(episode, spec.roles, [*spec.tools, *spec.helper_tools], default_prices()))

    return score
