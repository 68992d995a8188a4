"""``local/`` through vLLM (its CPU build in CI): an Inspect eval scores with logprobs, and greedy decoding gives
the transformers backend's tokens, on the tiny model and on SmolLM2-135M."""

from __future__ import annotations

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

pytestmark = pytest.mark.vllm

QUESTIONS = ["What is 2+2?", "Name a prime number.", "What is the capital of France?"]


@pytest.fixture(scope="session")
def vllm_log(eval_model_dir, tmp_path_factory):
    """One eval of the questions on ``local/`` with ``-M backend=vllm``: greedy, with logprobs."""
    task = Task(
        dataset=[Sample(id=i, input=q, target="4") for i, q in enumerate(QUESTIONS)],
        solver=generate(),
        scorer=includes(),
    )
    [log] = eval(
        task,
        model=f"local/{eval_model_dir}",
        model_args={"backend": "vllm", "max_model_len": 1024, "seed": 0, "dtype": "float32"},
        max_tokens=12,
        temperature=0,
        logprobs=True,
        log_dir=str(tmp_path_factory.mktemp("vllm-logs")),
        display="none",
    )
    return log


def test_local_vllm_scores_an_eval_with_logprobs(vllm_log, eval_model_dir):
    assert vllm_log.status == "success", vllm_log.error
    assert len(vllm_log.samples) == len(QUESTIONS)
    for sample in vllm_log.samples:
        assert sample.scores and sample.output.completion
        logprobs = sample.output.choices[0].logprobs.content
        assert len(logprobs) == sample.output.usage.output_tokens
        assert all(entry.logprob <= 0.0 for entry in logprobs)
    assert f"local/{eval_model_dir}" in vllm_log.stats.model_usage


NEAR_TIE = 1e-3
"""A top-2 logprob margin under which two engines' rounding may pick different greedy tokens."""


async def test_greedy_tokens_equal_the_transformers_backend(vllm_log, eval_model_dir):
    hf = get_model(f"local/{eval_model_dir}", backend="hf", dtype="float32", memoize=False)
    config = GenerateConfig(max_tokens=12, temperature=0, logprobs=True, top_logprobs=2)
    for sample in sorted(vllm_log.samples, key=lambda s: s.id):
        expected = await hf.generate(QUESTIONS[sample.id], config=config)
        assert sample.output.usage.input_tokens == expected.usage.input_tokens  # the same rendered prompt
        served, ours = sample.output.choices[0].logprobs.content, expected.choices[0].logprobs.content
        assert served and ours
        for vllm_token, hf_token in zip(served, ours, strict=False):
            # a token holding part of a character's bytes reads "" from vLLM and "\ufffd" from transformers
            same = vllm_token.token == hf_token.token or {vllm_token.token, hf_token.token} <= {"", "\ufffd"}
            if not same:  # only a near-tie may go either way; after it the texts differ
                first, second = hf_token.top_logprobs[:2]
                assert first.logprob - second.logprob < NEAR_TIE, (sample.id, hf_token, vllm_token)
                break
            assert vllm_token.logprob == pytest.approx(hf_token.logprob, abs=1e-3)
        else:
            assert sample.output.completion == expected.completion
