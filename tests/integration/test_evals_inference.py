"""Inference clients: transformers on a tiny random Qwen2 (greedy, batched = unbatched, a LoRA adapter
applied without merging, prompt-too-long reported), and the vLLM-server client against a local
OpenAI-compatible stand-in that records what it was sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from surrogate_dagster.inference import GenRequest, ModelRef, TransformersInference, VLLMServerInference, render_prompt
from surrogate_dagster.evals.tiny_model import build_tiny_qwen2
from surrogate_dagster.inference.server import ServerSpec, serve_command

MSG = ({"role": "user", "content": "Write def add(a, b)"},)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny"), max_positions=256)


@pytest.fixture(scope="module")
def client(tiny):
    return TransformersInference(ModelRef("tiny", str(tiny)), batch_size=4)


def test_render_uses_the_chat_template_and_prefix(client):
    text = render_prompt(client.tokenizer, GenRequest(messages=MSG, assistant_prefix="```python\n"))
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n```python\n")


def test_greedy_is_deterministic_and_batch_independent(client):
    reqs = [GenRequest(messages=({"role": "user", "content": f"task {i} " * (i + 1)},), max_new_tokens=12)
            for i in range(5)]
    together = client.generate(reqs)
    alone = [client.generate([r])[0] for r in reqs]
    assert [g.text for g in together] == [g.text for g in alone]
    assert all(g.completion_tokens <= 12 for g in together)
    assert client.stats.requests == 10 and client.stats.completion_tokens > 0


def test_prompt_too_long_is_a_result_not_a_truncation(client):
    long = GenRequest(messages=({"role": "user", "content": "word " * 400},), max_new_tokens=8)
    res = client.generate([long, GenRequest(messages=MSG, max_new_tokens=4)])
    assert res[0].finish_reason == "prompt_too_long" and res[0].text == ""
    assert res[1].finish_reason in ("stop", "length")


def test_lora_adapter_is_applied_without_merging(tiny, client, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj"]))
    torch.manual_seed(1)
    for name, p in peft_model.named_parameters():
        if "lora_B" in name:  # B starts at zero (a no-op adapter): make it do something
            torch.nn.init.normal_(p, std=2.0)
    peft_model.save_pretrained(tmp_path / "adapter")
    with_adapter = TransformersInference(ModelRef("tiny+lora", str(tiny), adapter_dir=str(tmp_path / "adapter")))
    from peft import PeftModel

    assert isinstance(with_adapter._model, PeftModel)  # served as base + adapter, not merged
    req = [GenRequest(messages=MSG, max_new_tokens=16)]
    assert with_adapter.generate(req)[0].text != client.generate(req)[0].text
    assert with_adapter.describe()["adapter_dir"].endswith("adapter")


class _Completions(BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        out = json.dumps({"choices": [{"text": f"echo:{body['model']}", "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 7, "completion_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def test_vllm_server_client_addresses_the_adapter_by_name(tiny):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Completions)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        ref = ModelRef("stage1_checkpoint", str(tiny), adapter_dir="/adapters/stage1")
        c = VLLMServerInference(ref, base_url=f"http://127.0.0.1:{srv.server_address[1]}", max_context=256)
        res = c.generate([GenRequest(messages=MSG, max_new_tokens=5, stop=("```",))])
        assert res[0].text == "echo:stage1_checkpoint" and res[0].completion_tokens == 2
        sent = _Completions.seen[-1]
        assert sent["temperature"] == 0.0 and sent["max_tokens"] == 5 and sent["stop"] == ["```"]
        assert sent["prompt"].startswith("<|im_start|>system")
    finally:
        srv.shutdown()
    cmd = serve_command(ServerSpec(port=9000), ref)
    assert cmd[:3] == ["vllm", "serve", str(tiny)] and "stage1_checkpoint=/adapters/stage1" in cmd
    assert "--enable-lora" in cmd


def test_checkpoint_artifacts_resolve_from_the_training_pointers(tiny, tmp_path):
    """The layout training/refs.py documents: an adapter-only stage on the tiny base, a merged stage."""
    import json as _json

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from surrogate_dagster.evals.checkpoints import checkpoint_revision, resolve_checkpoint
    from surrogate_dagster.storage import LocalObjectStore

    store = LocalObjectStore(tmp_path / "store")

    def put_dir(prefix, d):
        for f in sorted(p for p in d.rglob("*") if p.is_file()):
            store.put_file(f"{prefix}/{f.relative_to(d)}", f)

    put_dir("models/base_model/v1", tiny)
    store.put_bytes("models/base_model/_latest.json", _json.dumps({"prefix": "models/base_model/v1",
                                                                   "data_version": "v1"}).encode())
    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny), LoraConfig(r=2, target_modules=["q_proj"]))
    torch.nn.init.normal_(next(p for n, p in peft_model.named_parameters() if "lora_B" in n), std=1.0)
    peft_model.save_pretrained(tmp_path / "adapter")
    put_dir("training/stage1/fp1/adapter", tmp_path / "adapter")
    store.put_bytes("training/stage1/_latest.json", _json.dumps(
        {"output_prefix": "training/stage1/fp1", "data_version": "fp1", "merged": False}).encode())
    put_dir("training/stage1_6/fp6/merged", tiny)
    store.put_bytes("training/stage1_6/_latest.json", _json.dumps(
        {"output_prefix": "training/stage1_6/fp6", "data_version": "fp6", "merged": True}).encode())

    ref = resolve_checkpoint(store, "stage1_checkpoint", tmp_path / "cache", "tiny")
    assert ref.revision == "fp1" and ref.adapter_dir and Path(ref.model_dir).name == "v1"
    out = TransformersInference(ref).generate([GenRequest(messages=MSG, max_new_tokens=4)])
    assert out[0].completion_tokens > 0
    merged = resolve_checkpoint(store, "stage1_6_checkpoint", tmp_path / "cache")
    assert merged.adapter_dir is None and merged.model_dir.endswith("fp6/merged") and merged.revision == "fp6"
    assert checkpoint_revision(store, "stage2_checkpoint") is None
    with pytest.raises(FileNotFoundError, match="not been trained"):
        resolve_checkpoint(store, "stage2_checkpoint", tmp_path / "cache")
