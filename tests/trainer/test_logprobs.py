"""The chunked response scorer equals the naive full-vocabulary computation: values and gradients."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from mara_bench.core.samples import Sample
from mara_bench.trainer.algorithms.losses import entropy as naive_entropy
from mara_bench.trainer.learner.logprobs import chunk_rows, response_scores, score_hidden
from mara_bench.trainer.learner.packing import micro_batches, response_logits, token_logprobs


def _naive(head: torch.nn.Linear, hidden, targets, temperature, softcap=None):
    logits = head(hidden).float()
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    logits = logits / temperature
    return token_logprobs(logits, targets), naive_entropy(logits)


def _grads(tensors):
    return [t.grad.clone() for t in tensors]


@pytest.mark.parametrize("softcap", [None, 1.5])  # 1.5: most logits are bent by the cap
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("chunk_bytes", [4 * 50 * 3, 2**30])  # 3 rows a chunk (uneven tail), one chunk
def test_chunked_scores_and_gradients_equal_the_full_computation(bias, chunk_bytes, softcap):
    g = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(8, 50, bias=bias).double()
    hidden = torch.randn(10, 8, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 50, (10,), generator=g)
    weights_lp, weights_ent = torch.randn(10, generator=g), torch.randn(10, generator=g)
    params = [hidden, *head.parameters()]

    lp, ent = _naive(head, hidden, targets, 0.7, softcap)
    (lp.double() @ weights_lp.double() + ent.double() @ weights_ent.double()).backward()
    expected = _grads(params)
    for p in params:
        p.grad = None

    assert chunk_rows(50, chunk_bytes) == (3 if chunk_bytes < 1000 else 2**30 // 200)
    scores = score_hidden(
        head, hidden, targets, 0.7, with_entropy=True, chunk_bytes=chunk_bytes, softcap=softcap
    )
    torch.testing.assert_close(scores.logprobs, lp.float())
    torch.testing.assert_close(scores.entropy, ent.float())
    (
        scores.logprobs.double() @ weights_lp.double() + scores.entropy.double() @ weights_ent.double()
    ).backward()
    for got, want in zip(_grads(params), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_without_entropy_only_logprobs_are_computed_and_differentiated():
    g = torch.Generator().manual_seed(1)
    head = torch.nn.Linear(6, 20, bias=False).double()
    hidden = torch.randn(7, 6, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 20, (7,), generator=g)
    lp, _ = _naive(head, hidden, targets, 1.0)
    lp.sum().backward()
    expected = _grads([hidden, head.weight])
    hidden.grad = head.weight.grad = None
    scores = score_hidden(head, hidden, targets, chunk_bytes=4 * 20 * 2)
    assert scores.entropy is None
    scores.logprobs.sum().backward()
    for got, want in zip(_grads([hidden, head.weight]), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def _samples(shapes):
    g = torch.Generator().manual_seed(0)
    return [
        Sample(
            prompt_ids=torch.randint(3, 300, (p,), generator=g).tolist(),
            response_ids=torch.randint(3, 300, (r,), generator=g).tolist(),
            loss_mask=[1] * r,
        )
        for p, r in shapes
    ]


@pytest.mark.parametrize("temperature", [0.8, 1.0])
@pytest.mark.parametrize("layout", ["bucket", "pack"])
def test_headless_forward_scores_like_the_full_logits_with_the_same_model_gradients(
    tiny_model_dir, layout, temperature
):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).train()
    samples = _samples([(5, 3), (7, 9), (4, 1), (10, 6)])
    [batch] = micro_batches(samples, token_budget=100, layout=layout, max_padding=0.9)

    logits = response_logits(model, batch, temperature=temperature)
    lp, ent = token_logprobs(logits, batch.targets), naive_entropy(logits)
    (lp.sum() - 0.1 * ent.sum()).backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)

    scores = response_scores(
        model, batch, temperature=temperature, with_entropy=True, chunk_bytes=4 * 400 * 5
    )
    torch.testing.assert_close(scores.logprobs, lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(scores.entropy, ent, atol=1e-5, rtol=1e-5)
    (scores.logprobs.sum() - 0.1 * scores.entropy.sum()).backward()
    for name, param in model.named_parameters():
        torch.testing.assert_close(param.grad, expected[name], atol=1e-5, rtol=1e-4, msg=name)


def test_the_output_head_sees_no_positions(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    [batch] = micro_batches(_samples([(6, 4), (3, 2)]), token_budget=100, max_padding=0.9)
    widths = []
    handle = model.get_output_embeddings().register_forward_hook(
        lambda module, args, out: widths.append(out.shape[1])
    )
    scores = response_scores(model, batch)
    handle.remove()
    assert widths == [0] and scores.logprobs.shape == (6,) and scores.entropy is None


def _tiny_gemma2(softcap: float):
    """A generated two-layer Gemma-2 whose head output is strongly soft-capped (most logits bent by the cap)."""
    from transformers import Gemma2Config

    config = Gemma2Config(
        vocab_size=300,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        initializer_range=0.2,
        final_logit_softcapping=softcap,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).train()


def test_a_soft_capped_gemma2_scores_like_its_full_logits_with_the_same_gradients():
    model = _tiny_gemma2(softcap=2.0)
    samples = _samples([(5, 3), (7, 9), (4, 1), (10, 6)])
    [batch] = micro_batches(samples, token_budget=100, layout="pack", max_padding=0.9)

    logits = response_logits(model, batch, temperature=0.8)  # the model's own forward: capped logits
    assert logits.abs().max() <= 2.0 / 0.8 + 1e-6 and (logits.abs() > 1.0).any()
    lp, ent = token_logprobs(logits, batch.targets), naive_entropy(logits)
    (lp.sum() - 0.1 * ent.sum()).backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)

    scores = response_scores(model, batch, temperature=0.8, with_entropy=True, chunk_bytes=4 * 300 * 5)
    assert model.config.final_logit_softcapping == 2.0  # switched off only during the scoring forward
    torch.testing.assert_close(scores.logprobs, lp, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(scores.entropy, ent, atol=1e-5, rtol=1e-5)
    (scores.logprobs.sum() - 0.1 * scores.entropy.sum()).backward()
    for name, param in model.named_parameters():
        torch.testing.assert_close(param.grad, expected[name], atol=1e-5, rtol=1e-4, msg=name)


def test_a_logit_scale_after_the_head_is_refused_naming_it():
    model = _tiny_gemma2(softcap=2.0)
    model.config.logit_scale = 0.5
    [batch] = micro_batches(_samples([(4, 2)]), token_budget=100, max_padding=0.9)
    with pytest.raises(ValueError, match="logit_scale"):
        response_scores(model, batch)
