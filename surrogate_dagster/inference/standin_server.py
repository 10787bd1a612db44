"""A small OpenAI-compatible server over a transformers model: the CPU stand-in for ``vllm serve``.

    python -m surrogate_dagster.inference.standin_server MODEL_DIR --host 127.0.0.1 --port 8000 \\
        [--enable-lora --max-lora-rank 64 --lora-modules NAME=ADAPTER_DIR ...]

It takes the arguments :func:`.server.serve_command` builds (the GPU-only ones are accepted and
ignored), so :class:`.server.ManagedServer` runs it in place of ``vllm serve`` by swapping the
command prefix: the local profile and the tests exercise the real start / ready / generate / stop
path without a GPU. Endpoints: ``GET /health``, ``GET /v1/models`` (the base under its path, each
adapter under its ``--lora-modules`` name), ``POST /v1/completions`` (``prompt``: a string, a list of
token ids, or a list of either for a batch, as vLLM takes it; ``max_tokens``, ``temperature``,
``top_p``, ``n``, ``seed``, ``stop``) and ``POST /v1/chat/completions`` (the
model's chat template renders ``messages``). Like vLLM, it requires ``Authorization: Bearer
$VLLM_API_KEY`` on ``/v1`` routes when that variable is set, and a prompt that does not fit
``--max-model-len`` with its ``max_tokens`` is refused with HTTP 400; LoRA adapters are applied
on top of the base per request, never merged. One request generates at a time (one model in
memory); it is a test and CPU tool, not a throughput server.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _BadRequest(ValueError):
    pass


class StandinModel:
    """The base model with its adapters loaded side by side (PEFT named adapters)."""

    def __init__(self, model_dir: str, *, lora_modules: dict[str, str], max_model_len: int,
                 revision: str | None = None, max_lora_rank: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.base_name = model_dir
        self.tok = AutoTokenizer.from_pretrained(model_dir, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(model_dir, revision=revision, dtype=torch.float32)
        self.adapters = dict(lora_modules)
        if self.adapters:
            from peft import PeftConfig, PeftModel

            for name, path in self.adapters.items():
                rank = PeftConfig.from_pretrained(path).r
                if max_lora_rank is not None and rank > max_lora_rank:
                    # vLLM refuses such an adapter at load time; so does the stand-in
                    raise ValueError(f"LoRA rank {rank} of {name} is greater than max_lora_rank {max_lora_rank}")
            first, *rest = self.adapters.items()
            model = PeftModel.from_pretrained(model, first[1], adapter_name=first[0])
            for name, path in rest:
                model.load_adapter(path, adapter_name=name)
        self.model = model.eval()
        cfg_max = int(getattr(model.config, "max_position_embeddings", 0) or 0)
        self.max_model_len = min(x for x in (max_model_len, cfg_max) if x)
        gen_eos = model.generation_config.eos_token_id
        self.eos = [gen_eos] if isinstance(gen_eos, int) else list(gen_eos or [])
        for t in ("<|im_end|>", "<|endoftext|>"):
            tid = self.tok.convert_tokens_to_ids(t)
            if isinstance(tid, int) and tid >= 0 and tid != self.tok.unk_token_id and tid not in self.eos:
                self.eos.append(tid)
        self.lock = threading.Lock()

    def names(self) -> list[str]:
        return [self.base_name, *self.adapters]

    def complete(self, body: dict[str, Any], prompt: str | list[int]) -> dict[str, Any]:
        """One prompt (text, or token ids as a harness that renders the chat template itself sends them)."""
        name = body.get("model") or self.base_name
        if name not in self.names():
            raise _BadRequest(f"The model `{name}` does not exist.")
        n = int(body.get("n") or 1)
        max_tokens = int(body.get("max_tokens") or 16)
        temperature = float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0)
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        ids = list(prompt) if isinstance(prompt, list) else self.tok(prompt, add_special_tokens=False).input_ids
        if len(ids) + max_tokens > self.max_model_len:
            raise _BadRequest(f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                              f"requested {len(ids) + max_tokens} tokens ({len(ids)} in the messages, "
                              f"{max_tokens} in the completion).")
        torch = self.torch
        kw: dict[str, Any] = {"max_new_tokens": max_tokens, "eos_token_id": self.eos,
                              "pad_token_id": self.tok.pad_token_id or self.eos[0], "num_return_sequences": n}
        if temperature > 0:
            kw.update(do_sample=True, temperature=temperature, top_p=float(body.get("top_p") or 1.0), top_k=0)
        else:
            kw.update(do_sample=False)
        with self.lock:
            if body.get("seed") is not None:
                torch.manual_seed(int(body["seed"]))
            inp = torch.tensor([ids])
            with torch.inference_mode():
                if self.adapters and name in self.adapters:
                    self.model.set_adapter(name)
                    out = self.model.generate(input_ids=inp, attention_mask=torch.ones_like(inp), **kw)
                elif self.adapters:
                    with self.model.disable_adapter():
                        out = self.model.generate(input_ids=inp, attention_mask=torch.ones_like(inp), **kw)
                else:
                    out = self.model.generate(input_ids=inp, attention_mask=torch.ones_like(inp), **kw)
        choices, completion_tokens = [], 0
        for i in range(n):
            gen = out[i, len(ids):].tolist()
            cut = next((k for k, t in enumerate(gen) if t in self.eos), None)
            toks = gen if cut is None else gen[:cut]
            text = self.tok.decode(toks, skip_special_tokens=True)
            hit = min((p for p in (text.find(s) for s in stops if s) if p >= 0), default=-1)
            if hit >= 0:
                text = text[:hit]
            completion_tokens += len(gen) if cut is None else cut + 1
            finish = "stop" if cut is not None or hit >= 0 else "length"
            choices.append({"index": i, "text": text, "finish_reason": finish})
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": name, "choices": choices,
                "usage": {"prompt_tokens": len(ids), "completion_tokens": completion_tokens,
                          "total_tokens": len(ids) + completion_tokens}}

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("messages must be a non-empty list")
        prompt = self.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        body = {**body, "max_tokens": body.get("max_completion_tokens") or body.get("max_tokens")}
        res = self.complete(body, prompt)
        res.update(id=f"chatcmpl-{uuid.uuid4().hex}", object="chat.completion")
        res["choices"] = [{"index": c["index"], "finish_reason": c["finish_reason"],
                           "message": {"role": "assistant", "content": c["text"]}} for c in res["choices"]]
        return res


def _is_ids(x: Any) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(t, int) and not isinstance(t, bool) for t in x)


def prompts_of(prompt: Any) -> list[str | list[int]]:
    """The prompts of a completions request: one string, one list of token ids, or a list of either."""
    if isinstance(prompt, str) or _is_ids(prompt):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) or _is_ids(p) for p in prompt):
        return list(prompt)
    raise _BadRequest("prompt must be a string, a list of token ids, or a non-empty list of either")


def complete_batch(model: StandinModel, body: dict[str, Any]) -> dict[str, Any]:
    """Every prompt of the request, choices numbered across the batch (prompt i's j-th is i * n + j)."""
    results = [model.complete(body, p) for p in prompts_of(body.get("prompt"))]
    res = results[0]
    if len(results) > 1:
        n = len(res["choices"])
        res["choices"] = [{**c, "index": i * n + c["index"]} for i, r in enumerate(results) for c in r["choices"]]
        res["usage"] = {k: sum(r["usage"][k] for r in results) for k in res["usage"]}
    return res


def make_handler(model: StandinModel, api_key: str | None):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # one line per request, like vLLM's access log
            print(f"standin: {self.address_string()} {fmt % args}", flush=True)

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if api_key and self.headers.get("Authorization") != f"Bearer {api_key}":
                self._send(401, {"error": "Unauthorized"})
                return False
            return True

        def do_GET(self):  # noqa: N802 - http.server's naming
            if self.path == "/health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/v1/models":
                if self._authorized():
                    self._send(200, {"object": "list", "data": [
                        {"id": n, "object": "model", "owned_by": "standin", "max_model_len": model.max_model_len,
                         "parent": None if n == model.base_name else model.base_name} for n in model.names()]})
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def do_POST(self):  # noqa: N802
            if not self._authorized():
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if self.path == "/v1/completions":
                    self._send(200, complete_batch(model, body))
                elif self.path == "/v1/chat/completions":
                    self._send(200, model.chat(body))
                else:
                    self._send(404, {"error": f"no route {self.path}"})
            except (_BadRequest, json.JSONDecodeError, TypeError, ValueError) as e:
                self._send(400, {"object": "error", "message": str(e), "type": "BadRequestError", "code": 400})

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-model-len", type=int, default=0)
    ap.add_argument("--revision", default=None)
    ap.add_argument("--enable-lora", action="store_true")
    ap.add_argument("--max-lora-rank", type=int, default=16)
    ap.add_argument("--lora-modules", nargs="*", default=[])
    # GPU engine settings of vllm serve: accepted so the same command line works, no effect on CPU.
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--hf-overrides", default=None)
    args = ap.parse_args(argv)
    if args.lora_modules and not args.enable_lora:
        ap.error("--lora-modules needs --enable-lora")
    modules = {}
    for spec in args.lora_modules:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            ap.error(f"--lora-modules expects NAME=PATH, got {spec!r}")
        modules[name] = path
    sys.stdout.reconfigure(line_buffering=True)
    print(f"standin: loading {args.model} (adapters: {sorted(modules) or 'none'})", flush=True)
    model = StandinModel(args.model, lora_modules=modules, max_model_len=args.max_model_len,
                         revision=args.revision, max_lora_rank=args.max_lora_rank if modules else None)
    api_key = os.environ.get("VLLM_API_KEY") or None  # vllm serve's own variable for --api-key
    srv = ThreadingHTTPServer((args.host, args.port), make_handler(model, api_key))
    print(f"standin: serving {model.names()} on http://{args.host}:{args.port} "
          f"(max_model_len {model.max_model_len})", flush=True)
    try:
        srv.serve_forever()
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
