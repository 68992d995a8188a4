"""Dynamic masking of well-mastered positive tokens (MarsRL, arXiv:2511.11373 §3, "Dynamic Mask Well-mastered Positive
Tokens", from UloRL, arXiv 2507.19766).

A token is *well mastered and positive* (an MPT) when it belongs to a positively rewarded sample and the policy
already gives it probability at least ``probability`` (UloRL: 0.99). Training on such tokens only sharpens the
distribution further and drives entropy collapse, so while the policy's entropy is below a target the MPTs are
left out of the loss mask; above the target every token trains.

Here the entropy compared with the target is the token-mean policy entropy of the previous update (the first
update never masks), and a sample is positive when its reward is above 0 (MarsRL's rewards are +1 / -1).
Recipe: ``algorithm.mpt_target_entropy`` (null = off) and ``algorithm.mpt_probability``.
"""

from __future__ import annotations

import math

from torch import Tensor


def mastered_positive_tokens(logprobs: Tensor, reward: float, probability: float) -> Tensor:
    """``(T,)`` bool: the tokens of one row that are MPTs -- the row is positive (``reward`` > 0) and the
    token's logprob under the current policy is at least ``log(probability)``. ``logprobs``: ``(T,)``."""
    if reward <= 0:
        return logprobs.new_zeros(logprobs.shape, dtype=bool)
    return logprobs >= math.log(probability)
