"""``-M backend=vllm`` without a GPU: the real hand-off to Inspect's vLLM provider, against a fake vLLM server.

Inspect's own ``VLLMAPI`` runs unpatched except for the process launch (``start_local_server``), which records
the ``vllm serve`` command and points the client at a local HTTP server speaking vLLM's OpenAI-compatible API.
What is checked: the auto backend choice, the server command and environment built from the ``-M`` options, the
LoRA adapter registered on the server and routed by name, the request a generate call sends, and the reply, stop
reason, usage and model name that come back. The real-GPU run is ``test_vllm_backend_generates``.
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import threading
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch
from _lora_helpers import save_lora_adapter
from inspect_ai.model import ChatMessageUser, ContentReasoning, GenerateConfig, get_model
from inspect_ai.model._providers import vllm as inspect_vllm

from mara_bench.harness.providers import backends

REPLY = "<think>2 and 2</think> 4"


class FakeVLLMServer(ThreadingHTTPServer):
    """Answers ``/v1/models``, ``/v1/load_lora_adapter`` and ``/v1/chat/completions`` like ``vllm serve``."""

    def __init__(self, base_model: str):
        super().__init__(("127.0.0.1", 0), FakeVLLMHandler)
        self.base_model = base_model
        self.adapters: list[str] = []
        self.requests: list[dict] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class FakeVLLMHandler(BaseHTTPRequestHandler):
    server: FakeVLLMServer

    def do_GET(self) -> None:
        served = [self.server.base_model, *self.server.adapters]
        self._send(
            {"object": "list", "data": [{"id": m, "object": "model", "max_model_len": 4096} for m in served]}
        )

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/load_lora_adapter":
            self.server.adapters.append(body["lora_name"])
            self._send({"status": "ok"})
            return
        self.server.requests.append(body)
        message = {"role": "assistant", "content": REPLY}
        self._send(
            {
                "id": "cmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
            }
        )

    def _send(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def adapter(tiny_qwen, tmp_path_factory) -> Path:
    return save_lora_adapter(tiny_qwen, tmp_path_factory.mktemp("vllm-lora"))


@pytest.fixture
def fake_gpu_vllm(monkeypatch, tiny_qwen) -> Iterator[tuple[FakeVLLMServer, list[dict]]]:
    """vLLM 'installed', a CUDA GPU 'present', the tiny model past ``auto``'s size floor, and server launches
    answered by a fake server."""
    if "vllm" not in sys.modules:
        fake = types.ModuleType("vllm")
        fake.__spec__ = importlib.machinery.ModuleSpec("vllm", None, origin="fake")
        fake.__spec__.has_location = True  # an installed package, not a bare directory on the path
        monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(backends, "AUTO_VLLM_MIN_BYTES", 0)
    monkeypatch.setattr(inspect_vllm, "_vllm_servers", {})
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server = FakeVLLMServer(str(tiny_qwen))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    launches: list[dict] = []

    def start_local_server(cmd, *, server_args, env, **_):
        launches.append({"cmd": list(cmd), "server_args": dict(server_args), "env": dict(env)})
        return server.url, None, server.server_address[1]

    monkeypatch.setattr(inspect_vllm, "start_local_server", start_local_server)
    yield server, launches
    server.shutdown()
    server.server_close()


async def test_auto_backend_serves_an_adapter_through_inspects_vllm_provider(
    fake_gpu_vllm, tiny_qwen, adapter
):
    server, launches = fake_gpu_vllm
    model = get_model(
        f"local/{adapter}",
        dtype="bfloat16",
        device="cuda:1",
        max_model_len=4096,
        seed=7,
        enable_thinking=False,
        memoize=False,
    )
    assert isinstance(model.api, inspect_vllm.VLLMAPI)
    output = await model.generate(
        [ChatMessageUser(content="What is 2+2?")], config=GenerateConfig(max_tokens=3, temperature=0.5)
    )
    [launch] = launches
    assert launch["cmd"][:3] == ["vllm", "serve", str(tiny_qwen)]  # the base model; the adapter goes via LoRA
    command = dict(zip(launch["cmd"][3::2], launch["cmd"][4::2], strict=True))
    assert command["--host"] == "127.0.0.1"  # loopback only, never every address
    assert command["--api-key"] not in ("inspectai", "") and len(command["--api-key"]) >= 24  # this run's own
    assert launch["server_args"] == {
        "dtype": "bfloat16",
        "max_model_len": 4096,
        "seed": 7,
        "default_chat_template_kwargs": '{"enable_thinking": false}',
        "tensor_parallel_size": 1,
        "enable_lora": True,
        "max_lora_rank": 4,  # r of the saved adapter
    }
    assert launch["env"] == {"CUDA_VISIBLE_DEVICES": "1"}
    assert server.adapters == [str(adapter)]
    [request] = server.requests
    assert request["model"] == str(adapter)  # vLLM routes LoRA requests by adapter name
    assert (request["max_tokens"], request["temperature"]) == (3, 0.5)
    assert request["messages"] == [{"role": "user", "content": "What is 2+2?"}]
    # Inspect's OpenAI-compatible layer keeps the <think> block in the log as a reasoning part
    reasoning = [c.reasoning for c in output.message.content if isinstance(c, ContentReasoning)]
    assert (output.completion, reasoning) == ("4", ["2 and 2"])
    assert (output.stop_reason, output.usage.input_tokens, output.usage.output_tokens) == (
        "max_tokens",
        11,
        3,
    )
    assert str(model) == f"local/{adapter}"  # the name the user gave, also after the server started


def test_vllm_only_options_and_hf_only_options_are_clear_errors(fake_gpu_vllm, tiny_qwen):
    with pytest.raises(ValueError, match="-M device=cpu is not a CUDA device for the vLLM backend"):
        get_model(f"local/{tiny_qwen}", device="cpu", memoize=False)
    with pytest.raises(ValueError, match="return_token_ids=true needs -M backend=hf"):
        get_model(f"local/{tiny_qwen}", return_token_ids=True, memoize=False)
    hf = get_model(f"local/{tiny_qwen}", backend="hf", device="cpu", memoize=False)  # still selectable
    assert not isinstance(hf.api, inspect_vllm.VLLMAPI)


def test_the_vllm_dtype_is_always_explicit(monkeypatch, tiny_qwen, tmp_path):
    from mara_bench.harness.providers.local_options import LocalOptions
    from mara_bench.harness.providers.resolve import ResolvedCheckpoint
    from mara_bench.harness.providers.vllm_api import vllm_server_args

    half = tmp_path / "half"
    half.mkdir()
    (half / "config.json").write_text(json.dumps({"model_type": "qwen2", "dtype": "bfloat16"}))
    auto = LocalOptions.parse({})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # vLLM's CPU build
    for model in (tiny_qwen, half):
        checkpoint = ResolvedCheckpoint(model=str(model), tokenizer=str(tiny_qwen))
        assert vllm_server_args(checkpoint, auto)["dtype"] == "float32"  # not vLLM's silent bfloat16
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    on_gpu = ResolvedCheckpoint(model=str(half), tokenizer=str(tiny_qwen))
    assert vllm_server_args(on_gpu, auto)["dtype"] == "bfloat16"  # the checkpoint's own
    assert vllm_server_args(on_gpu, LocalOptions.parse({"dtype": "float16"}))["dtype"] == "float16"
