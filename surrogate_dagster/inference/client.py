"""Greedy inference for one checkpoint, Dagster-free: one interface, three backends.

Shared by every phase that generates from a checkpoint (synth's execution-graded pairs, the
evals), so it sits below them.

- ``TransformersInference``: transformers (+ PEFT adapter, NOT merged) in this process; the CPU
  path of the local profile, and a GPU fallback.
- ``VLLMServerInference``: an OpenAI-compatible ``/v1/completions`` endpoint (``vllm serve``) in
  the GPU image. vLLM pins its own torch/transformers, so the pipeline never imports it: it talks
  to the server over HTTP. A LoRA adapter is served beside its base with
  ``--enable-lora --lora-modules <name>=<dir>`` and requested by that name: no merge. The server
  itself is started and stopped by :mod:`.server`.
- ``VLLMOfflineInference``: ``vllm.LLM`` with ``LoRARequest``, for code that runs INSIDE the GPU
  image (imports vllm lazily). Not exercised on the CPU machine.

Every backend renders prompts the same way (:func:`render_prompt`: the checkpoint's own chat
template, then an optional assistant prefix), decodes greedily, and cuts at stop strings, so a
score does not depend on the backend. Prompts longer than the context are not truncated: they
come back with ``finish_reason="prompt_too_long"`` and count as failures.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..scrub import scrub_methods



def server_error(response: Any, *secrets: str) -> RuntimeError:
    """The error for a non-200 reply of an inference server: status and the start of its body,
    scrubbed first (a gateway may echo the request's Authorization header or other credentials)."""
    from ..llm.client import scrub

    body = scrub(response.text, tuple(s.removeprefix("Bearer ") for s in secrets if s))
    return RuntimeError(f"inference server: HTTP {response.status_code}: {body[:300]}")

@dataclass(frozen=True)
class ModelRef:
    """What to load: a HF model dir, optionally a LoRA adapter dir on top of it."""

    name: str  # e.g. the checkpoint asset name
    model_dir: str
    adapter_dir: str | None = None
    revision: str = ""  # content hash of the artifact, recorded in every report
    model_revision: str | None = None  # a Hub commit when model_dir is a Hub id (the pinned base)
    # the largest LoRA rank the serving engine reserves slots for (vllm serve --max-lora-rank);
    # None: the server's configured default
    max_lora_rank: int | None = None


@dataclass(frozen=True)
class GenRequest:
    """One greedy generation: chat ``messages`` (or a ``raw_prompt``), optional assistant prefix."""

    messages: tuple[dict, ...] = ()
    assistant_prefix: str = ""
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    raw_prompt: str | None = None


@dataclass
class GenResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # stop | length | prompt_too_long


@dataclass
class InferenceStats:
    """Running totals a harness reports (generation throughput)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    too_long: int = 0

    def add(self, results: Sequence[GenResult], seconds: float) -> None:
        self.requests += len(results)
        self.prompt_tokens += sum(r.prompt_tokens for r in results)
        self.completion_tokens += sum(r.completion_tokens for r in results)
        self.too_long += sum(r.finish_reason == "prompt_too_long" for r in results)
        self.seconds += seconds

    def as_dict(self) -> dict[str, float]:
        s = self.seconds or 1e-9
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 3),
                "completion_tokens_per_s": round(self.completion_tokens / s, 1),
                "requests_per_s": round(self.requests / s, 3), "prompt_too_long": self.too_long}


def render_prompt(tokenizer: Any, req: GenRequest) -> str:
    """The exact text the model sees: chat template + generation prompt + assistant prefix."""
    if req.raw_prompt is not None:
        return req.raw_prompt + req.assistant_prefix
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError("the tokenizer has no chat template; pass raw_prompt for a base model")
    text = tokenizer.apply_chat_template(list(req.messages), tokenize=False, add_generation_prompt=True)
    return text + req.assistant_prefix


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Text up to the first stop string (excluded), and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


class InferenceClient(ABC):
    """Greedy batched generation for one checkpoint."""

    # Set by each backend's __init__: its tokenizer and the prompt + completion tokens it accepts.
    _tok: Any
    _max_context: int

    def __init__(self, ref: ModelRef) -> None:
        self.ref = ref
        self.stats = InferenceStats()

    @property
    def tokenizer(self) -> Any:
        return self._tok

    @property
    def max_context(self) -> int:
        """Prompt + completion tokens the model accepts."""
        return self._max_context

    @abstractmethod
    def _generate(self, prompts: list[str], reqs: list[GenRequest]) -> list[GenResult]: ...

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def generate(self, requests: Sequence[GenRequest]) -> list[GenResult]:
        """Results in request order; stats updated."""
        reqs = list(requests)
        t0 = time.monotonic()
        prompts = [render_prompt(self.tokenizer, r) for r in reqs]
        out = self._generate(prompts, reqs)
        self.stats.add(out, time.monotonic() - t0)
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": type(self).__name__, "model": self.ref.name, "model_dir": self.ref.model_dir,
                "adapter_dir": self.ref.adapter_dir or "", "revision": self.ref.revision,
                "max_context": self.max_context, "decoding": "greedy"}


class TransformersInference(InferenceClient):
    """transformers in-process; a PEFT adapter is applied on top of its base, never merged."""

    def __init__(self, ref: ModelRef, *, device: str = "cpu", dtype: str = "float32", batch_size: int = 16,
                 max_context: int | None = None, threads: int | None = None) -> None:
        super().__init__(ref)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.device, self.batch_size = device, batch_size
        tok_dir = ref.adapter_dir if ref.adapter_dir and (Path(ref.adapter_dir) / "tokenizer_config.json").exists() \
            else ref.model_dir
        rev = None if tok_dir == ref.adapter_dir else ref.model_revision
        self._tok = AutoTokenizer.from_pretrained(tok_dir, revision=rev)
        self._tok.padding_side = "left"  # decoder-only batching: pad on the left
        if self._tok.pad_token is None:
            self._tok.pad_token = self._tok.eos_token
        model = AutoModelForCausalLM.from_pretrained(ref.model_dir, dtype=getattr(torch, dtype),
                                                     revision=ref.model_revision)
        if ref.adapter_dir:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, ref.adapter_dir)
        self._model = model.to(device).eval()
        cfg_max = int(getattr(model.config, "max_position_embeddings", 0) or 0)
        self._max_context = min(x for x in (max_context, cfg_max) if x) if (max_context or cfg_max) else 4096
        gen_eos = model.generation_config.eos_token_id
        self._eos = [gen_eos] if isinstance(gen_eos, int) else list(gen_eos or [])
        for t in ("<|im_end|>", "<|endoftext|>"):
            tid = self._tok.convert_tokens_to_ids(t)
            if isinstance(tid, int) and tid >= 0 and tid != self._tok.unk_token_id and tid not in self._eos:
                self._eos.append(tid)

    def _generate(self, prompts: list[str], reqs: list[GenRequest]) -> list[GenResult]:
        import torch

        ids = [self._tok(p, add_special_tokens=False).input_ids for p in prompts]
        results: list[GenResult | None] = [None] * len(prompts)
        runnable = []
        for i, (x, r) in enumerate(zip(ids, reqs)):
            if len(x) + r.max_new_tokens > self._max_context:
                results[i] = GenResult("", len(x), 0, "prompt_too_long")
            else:
                runnable.append(i)
        # group by length and budget so padding and wasted steps stay small
        runnable.sort(key=lambda i: (reqs[i].max_new_tokens, len(ids[i])))
        for start in range(0, len(runnable), self.batch_size):
            chunk = runnable[start:start + self.batch_size]
            width = max(len(ids[i]) for i in chunk)
            pad = self._tok.pad_token_id
            input_ids = torch.tensor([[pad] * (width - len(ids[i])) + ids[i] for i in chunk])
            mask = torch.tensor([[0] * (width - len(ids[i])) + [1] * len(ids[i]) for i in chunk])
            max_new = max(reqs[i].max_new_tokens for i in chunk)
            with torch.inference_mode():
                out = self._model.generate(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                                           max_new_tokens=max_new, do_sample=False, eos_token_id=self._eos,
                                           pad_token_id=pad)
            for row, i in enumerate(chunk):
                gen = out[row, width:].tolist()
                gen = gen[:reqs[i].max_new_tokens]
                n = len(gen)
                hit_eos = False
                for k, t in enumerate(gen):
                    if t in self._eos:
                        gen, n, hit_eos = gen[:k], k + 1, True
                        break
                text = self._tok.decode(gen, skip_special_tokens=True)
                text, hit_stop = cut_at_stop(text, reqs[i].stop)
                results[i] = GenResult(text, len(ids[i]), n, "stop" if hit_eos or hit_stop else "length")
        return [r for r in results if r is not None]


@scrub_methods  # a server that echoes the bearer token in an error body: exceptions leave scrubbed
class VLLMServerInference(InferenceClient):
    """An OpenAI-compatible completions server (``vllm serve``); prompts rendered here."""

    def __init__(self, ref: ModelRef, *, base_url: str, served_name: str | None = None,
                 api_key_env: str | None = None, max_context: int = 32768, concurrency: int = 32,
                 timeout_s: float = 600.0) -> None:
        super().__init__(ref)
        import httpx
        from transformers import AutoTokenizer

        self._tok = AutoTokenizer.from_pretrained(ref.model_dir, revision=ref.model_revision)
        self._max_context = max_context
        # a LoRA adapter is addressed by the name it was registered under with --lora-modules
        self.served_name = served_name or (ref.name if ref.adapter_dir else ref.model_dir)
        key = os.environ.get(api_key_env) if api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s, headers=headers)
        self.concurrency = concurrency

    def _one(self, prompt: str, req: GenRequest) -> GenResult:
        n_prompt = self.count_tokens(prompt)
        if n_prompt + req.max_new_tokens > self._max_context:
            return GenResult("", n_prompt, 0, "prompt_too_long")
        body = {"model": self.served_name, "prompt": prompt, "max_tokens": req.max_new_tokens,
                "temperature": 0.0, "stop": list(req.stop) or None, "skip_special_tokens": True}
        r = self._http.post("/v1/completions", json={k: v for k, v in body.items() if v is not None})
        if r.status_code != 200:
            raise server_error(r, self._http.headers.get("Authorization", ""))
        data = r.json()
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        return GenResult(choice["text"], int(usage.get("prompt_tokens", n_prompt)),
                         int(usage.get("completion_tokens", 0)),
                         "length" if choice.get("finish_reason") == "length" else "stop")

    def _generate(self, prompts: list[str], reqs: list[GenRequest]) -> list[GenResult]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._one, prompts, reqs))


class VLLMOfflineInference(InferenceClient):
    """``vllm.LLM`` in-process; only inside the GPU image (vLLM cannot share the pipeline's env)."""

    def __init__(self, ref: ModelRef, *, max_context: int = 32768, tensor_parallel: int = 1,
                 max_lora_rank: int = 64, gpu_memory_utilization: float = 0.9) -> None:
        super().__init__(ref)
        from vllm import LLM  # noqa: PLC0415 - GPU image only

        self._llm = LLM(model=ref.model_dir, enable_lora=bool(ref.adapter_dir), max_lora_rank=max_lora_rank,
                        max_model_len=max_context, tensor_parallel_size=tensor_parallel,
                        gpu_memory_utilization=gpu_memory_utilization)
        self._tok = self._llm.get_tokenizer()
        self._max_context = max_context

    def _generate(self, prompts: list[str], reqs: list[GenRequest]) -> list[GenResult]:
        from vllm import SamplingParams
        from vllm.lora.request import LoRARequest

        lora = LoRARequest(self.ref.name, 1, self.ref.adapter_dir) if self.ref.adapter_dir else None
        params = [SamplingParams(temperature=0.0, max_tokens=r.max_new_tokens, stop=list(r.stop) or None)
                  for r in reqs]
        outs = self._llm.generate(prompts, params, lora_request=lora)
        return [GenResult(o.outputs[0].text, len(o.prompt_token_ids), len(o.outputs[0].token_ids),
                          "length" if o.outputs[0].finish_reason == "length" else "stop") for o in outs]


@dataclass
class InferenceSettings:
    """Backend choice and knobs (a profile's ``phases.evals.inference`` section)."""

    backend: str = "transformers"  # transformers | vllm_server | vllm_offline
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 16
    max_context: int | None = None
    threads: int | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 32
    extra: dict = field(default_factory=dict)


def make_inference(ref: ModelRef, settings: InferenceSettings) -> InferenceClient:
    """Build the configured backend for one checkpoint."""
    if settings.backend == "transformers":
        return TransformersInference(ref, device=settings.device, dtype=settings.dtype,
                                     batch_size=settings.batch_size, max_context=settings.max_context,
                                     threads=settings.threads)
    if settings.backend == "vllm_server":
        if not settings.base_url:
            raise ValueError("inference backend vllm_server needs base_url")
        return VLLMServerInference(ref, base_url=settings.base_url, api_key_env=settings.api_key_env,
                                   max_context=settings.max_context or 32768, concurrency=settings.concurrency)
    if settings.backend == "vllm_offline":
        return VLLMOfflineInference(ref, max_context=settings.max_context or 32768,
                                    max_lora_rank=ref.max_lora_rank or 64)
    raise ValueError(f"unknown inference backend {settings.backend!r}")

