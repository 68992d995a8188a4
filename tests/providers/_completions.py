"""The check the continuous-batching tests share: a completion decoded in a shared batch equals one decoded alone."""

from __future__ import annotations

import torch

from mara_bench.harness.providers.generation import Completion


def assert_same_completion(shared: Completion, single: Completion) -> None:
    """Same tokens, text and finish reason, logprobs within 1e-5, and the same top-logprob token ids."""
    assert (shared.response_ids, shared.text, shared.finish_reason) == (
        single.response_ids,
        single.text,
        single.finish_reason,
    )
    torch.testing.assert_close(
        torch.tensor(shared.logprobs), torch.tensor(single.logprobs), atol=1e-5, rtol=1e-5
    )
    if single.top_logprobs is not None:
        assert [[t for t, _ in best] for best in shared.top_logprobs] == [
            [t for t, _ in best] for best in single.top_logprobs
        ]
