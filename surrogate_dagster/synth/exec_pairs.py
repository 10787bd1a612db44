"""Glue for execution-graded preference pairs (runbook Days 15-16), Dagster-free:

    prompts that carry tests (curated OpenCodeInstruct / opc-sft-stage2 educational_instruct rows,
    the DevSecOps seed prompts) -> k samples each at temperature 1.0 from a checkpoint
    -> graded in the sandbox (graders.py) -> best vs worst where they differ (pairs.py)
    -> normalized DPO rows, source ``exec_graded``.

Sampling goes through a ``generate(prompts, n, temperature) -> list[list[str]]`` callable:
:class:`TransformersSampler` (in-process, the local profile) or :class:`VLLMServerSampler` (an
OpenAI-compatible ``vllm serve`` in the GPU image). Both render prompts with the checkpoint's own
chat template (``inference.render_prompt``), like the evals do. The evals' inference clients
decode greedily only, hence these samplers.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Sequence

from ..inference import GenRequest, ModelRef, render_prompt
from .graders import GradingTask, load_devsecops_tasks, task_from_opc_educational, task_from_opencodeinstruct
from .pairs import make_pair, pass_rate_summary, scored_from_grades

EXEC_SOURCE = "exec_graded"  # the rows' ``source`` (pairs.py names its context "exec_graded_pairs")
Generate = Callable[[list[str], int, float], list[list[str]]]


# ------------------------------------------------------------------------------ prompts with tests
def _user_prompt(row: dict) -> str | None:
    users = [m["content"] for m in row.get("messages") or [] if m.get("role") == "user"]
    return users[0] if users else None


def task_from_curated(row: dict, source: str) -> GradingTask | str:
    """A grading task from one curated normalized row, or why the row has none."""
    meta = json.loads(row["meta"]) if isinstance(row.get("meta"), str) and row["meta"] else {}
    prompt = _user_prompt(row)
    if not prompt:
        return "no_user_prompt"
    try:
        if source == "opencodeinstruct":
            if not meta.get("unit_tests"):
                return "no_tests"
            return task_from_opencodeinstruct({"id": row["id"], "input": prompt, "unit_tests": meta["unit_tests"]})
        if source == "opc_sft_stage2":
            if meta.get("config") != "educational_instruct" or not meta.get("testcase"):
                return "no_tests"  # only the educational_instruct config carries test cases
            return task_from_opc_educational({"instruction": prompt, "testcase": meta["testcase"]}, row_id=row["id"])
    except ValueError:
        return "no_runnable_tests"  # every test failed to parse
    raise ValueError(f"no prompts-with-tests rule for source {source!r} (known: opencodeinstruct, opc_sft_stage2)")


def _stable_order(tasks: list[GradingTask]) -> list[GradingTask]:
    # A hash order spreads a capped selection over the source instead of taking its first rows,
    # and stays the same between runs.
    return sorted(tasks, key=lambda t: hashlib.sha256(t.id.encode()).hexdigest())


def tasks_from_rows(rows: Sequence[dict], source: str, limit: int | None,
                    max_prompt_chars: int) -> tuple[list[GradingTask], Counter]:
    """Grading tasks of one source (at most ``limit``) and counted reasons for rows left out."""
    tasks, dropped = [], Counter()
    for row in rows:
        t = task_from_curated(row, source)
        if isinstance(t, str):
            dropped[f"{source}:{t}"] += 1
        elif len(t.prompt) > max_prompt_chars:
            dropped[f"{source}:prompt_too_long"] += 1
        else:
            t.source = source
            tasks.append(t)
    tasks = _stable_order(tasks)
    if limit is not None and len(tasks) > limit:
        dropped[f"{source}:over_limit"] += len(tasks) - limit
        tasks = tasks[:limit]
    return tasks, dropped


def devsecops_tasks(limit: int | None, max_prompt_chars: int) -> tuple[list[GradingTask], Counter]:
    """The DevSecOps seed prompts (assets/devsecops_prompts.yaml), at most ``limit``."""
    tasks, dropped = [], Counter()
    for t in load_devsecops_tasks():
        if len(t.prompt) > max_prompt_chars:
            dropped["devsecops:prompt_too_long"] += 1
        else:
            tasks.append(t)
    if limit is not None and len(tasks) > limit:
        # round-robin over kinds, so a small (local) limit still covers Dockerfile, Bash, Terraform, k8s
        by_kind: dict[str, list[GradingTask]] = {}
        for t in tasks:
            by_kind.setdefault(t.kind, []).append(t)
        spread = [t for rnd in zip_longest(*by_kind.values()) for t in rnd if t is not None]
        dropped["devsecops:over_limit"] += len(tasks) - limit
        tasks = spread[:limit]
    return tasks, dropped


# ------------------------------------------------------------------------------------- pairing
@dataclass
class ExecPairsResult:
    rows: list[dict]  # normalized DPO rows
    grades: list[dict]  # one row per sampled completion (for audit)
    dropped: Counter = field(default_factory=Counter)  # prompts without a pair, by reason
    summary: dict = field(default_factory=dict)
    groups_by_kind: dict[str, list] = field(default_factory=dict)  # kind -> [[ScoredCompletion]*k]


def build_exec_pairs(tasks: Sequence[GradingTask], generate: Generate, grader: Any, *, n: int = 4,
                     temperature: float = 1.0, min_margin: float = 0.0) -> ExecPairsResult:
    """Sample ``n`` completions per task, grade all of them in one batch, pair best vs worst."""
    tasks = list(tasks)
    t0 = time.monotonic()
    samples = generate([t.prompt for t in tasks], n, temperature) if tasks else []
    sample_s = time.monotonic() - t0
    if len(samples) != len(tasks) or any(len(s) != n or not all(isinstance(c, str) for c in s) for s in samples):
        raise ValueError(f"generate returned {[len(s) for s in samples]} completions for {len(tasks)} prompts; "
                         f"expected {n} strings per prompt")
    t0 = time.monotonic()
    grades = grader.grade_many([(t, c) for t, s in zip(tasks, samples) for c in s])
    grade_s = time.monotonic() - t0
    rows, grade_rows, dropped = [], [], Counter()
    groups: dict[str, list] = {}
    for i, (task, completions) in enumerate(zip(tasks, samples)):
        scored = scored_from_grades(completions, grades[i * n:(i + 1) * n])
        groups.setdefault(task.kind, []).append(scored)
        for j, (c, s) in enumerate(zip(completions, scored)):
            grade_rows.append({"task_id": task.id, "source": task.source, "kind": task.kind, "sample": j,
                               "score": s.score, "passed": s.passed,
                               "failed_gate": (s.grade or {}).get("failed_gate") or "",
                               "checks": json.dumps((s.grade or {}).get("checks", []), default=str),
                               "completion": c})
        row, reason = make_pair(task.id, task.prompt, scored, task_source=task.source, min_margin=min_margin,
                                extra_meta={"kind": task.kind, "temperature": temperature})
        if row is None:
            dropped[reason] += 1
        else:
            rows.append({**row, "source": EXEC_SOURCE})
    all_groups = [g for gs in groups.values() for g in gs]
    summary = {"prompts": len(tasks), "pairs": len(rows), "samples_per_prompt": n, "temperature": temperature,
               "overall": pass_rate_summary(all_groups),
               "by_kind": {k: pass_rate_summary(g) for k, g in sorted(groups.items())},
               "pairs_by_kind": dict(Counter(json.loads(r["meta"])["kind"] for r in rows)),
               "no_pair_by_reason": dict(dropped), "sample_s": round(sample_s, 2), "grade_s": round(grade_s, 2)}
    return ExecPairsResult(rows, grade_rows, dropped, summary, groups)


# ------------------------------------------------------------------------------------- samplers
def _user_turn(prompt: str) -> GenRequest:
    return GenRequest(messages=({"role": "user", "content": prompt},))


class TransformersSampler:
    """Temperature sampling with transformers (+ a PEFT adapter on its base, never merged)."""

    def __init__(self, ref: ModelRef, *, device: str = "cpu", dtype: str = "float32", batch_size: int = 8,
                 max_new_tokens: int = 1024, seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.ref, self.device, self.batch_size = ref, device, batch_size
        self.max_new_tokens, self.seed = max_new_tokens, seed
        tok_dir = ref.adapter_dir if ref.adapter_dir and (Path(ref.adapter_dir) / "tokenizer_config.json").exists() \
            else ref.model_dir
        self.tok = AutoTokenizer.from_pretrained(tok_dir)
        self.tok.padding_side = "left"  # decoder-only batching
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        model = AutoModelForCausalLM.from_pretrained(ref.model_dir, dtype=getattr(torch, dtype))
        if ref.adapter_dir:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, ref.adapter_dir)
        self.model = model.to(device).eval()
        self.max_context = int(getattr(model.config, "max_position_embeddings", 0) or 4096)
        eos = model.generation_config.eos_token_id
        self.eos = [eos] if isinstance(eos, int) else list(eos or [])
        for t in ("<|im_end|>", "<|endoftext|>"):
            tid = self.tok.convert_tokens_to_ids(t)
            if isinstance(tid, int) and tid >= 0 and tid != self.tok.unk_token_id and tid not in self.eos:
                self.eos.append(tid)

    def __call__(self, prompts: list[str], n: int, temperature: float) -> list[list[str]]:
        import torch

        ids = [self.tok(render_prompt(self.tok, _user_turn(p)), add_special_tokens=False).input_ids for p in prompts]
        too_long = [i for i, x in enumerate(ids) if len(x) + self.max_new_tokens > self.max_context]
        if too_long:
            raise ValueError(f"{len(too_long)} prompt(s) do not fit {self.max_context} tokens with "
                             f"{self.max_new_tokens} new ones (first: #{too_long[0]}); lower max_prompt_chars")
        out: list[list[str]] = [[] for _ in prompts]
        order = sorted(range(len(prompts)), key=lambda i: len(ids[i]))  # similar lengths batch together
        pad = self.tok.pad_token_id
        for b, start in enumerate(range(0, len(order), self.batch_size)):
            chunk = order[start:start + self.batch_size]
            width = max(len(ids[i]) for i in chunk)
            input_ids = torch.tensor([[pad] * (width - len(ids[i])) + ids[i] for i in chunk])
            mask = torch.tensor([[0] * (width - len(ids[i])) + [1] * len(ids[i]) for i in chunk])
            torch.manual_seed(self.seed * 1_000_003 + b)  # the same run samples the same completions
            with torch.inference_mode():
                gen = self.model.generate(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), do_sample=True,
                    temperature=temperature, top_p=1.0, top_k=0, num_return_sequences=n,
                    max_new_tokens=self.max_new_tokens, eos_token_id=self.eos, pad_token_id=pad)
            for r, i in enumerate(chunk):  # outputs are grouped per input: rows r*n .. r*n+n-1
                for j in range(n):
                    toks = gen[r * n + j, width:].tolist()
                    cut = next((k for k, t in enumerate(toks) if t in self.eos), len(toks))
                    out[i].append(self.tok.decode(toks[:cut], skip_special_tokens=True))
        return out


class VLLMServerSampler:
    """``n`` samples per prompt from an OpenAI-compatible ``/v1/completions`` server (vllm serve)."""

    def __init__(self, ref: ModelRef, *, base_url: str, served_name: str | None = None,
                 api_key_env: str | None = None, max_new_tokens: int = 1024, seed: int = 0,
                 concurrency: int = 16, timeout_s: float = 900.0) -> None:
        import httpx
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(ref.adapter_dir if ref.adapter_dir and
                                                 (Path(ref.adapter_dir) / "tokenizer_config.json").exists()
                                                 else ref.model_dir)
        # a LoRA adapter is addressed by the name it was registered under with --lora-modules
        self.served_name = served_name or (ref.name if ref.adapter_dir else ref.model_dir)
        key = os.environ.get(api_key_env) if api_key_env else None
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_s,
                                  headers={"Authorization": f"Bearer {key}"} if key else {})
        self.max_new_tokens, self.seed, self.concurrency = max_new_tokens, seed, concurrency

    def _one(self, i: int, prompt: str, n: int, temperature: float) -> list[str]:
        body = {"model": self.served_name, "prompt": render_prompt(self.tok, _user_turn(prompt)), "n": n,
                "temperature": temperature, "top_p": 1.0, "top_k": -1, "max_tokens": self.max_new_tokens,
                "seed": self.seed * 1_000_003 + i, "skip_special_tokens": True}
        r = self._http.post("/v1/completions", json=body)
        if r.status_code != 200:
            raise RuntimeError(f"inference server: HTTP {r.status_code}: {r.text[:300]}")
        choices = sorted(r.json()["choices"], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise RuntimeError(f"inference server returned {len(choices)} choices for n={n}")
        return [c["text"] for c in choices]

    def __call__(self, prompts: list[str], n: int, temperature: float) -> list[list[str]]:
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda a: self._one(a[0], a[1], n, temperature), enumerate(prompts)))


def make_sampler(ref: ModelRef, settings: Any) -> Generate:
    """The sampler a profile's ``phases.synth`` asks for (``settings``: config.SynthProfile)."""
    if settings.backend == "transformers":
        return TransformersSampler(ref, device=settings.device, dtype=settings.dtype, batch_size=settings.batch_size,
                                   max_new_tokens=settings.max_new_tokens, seed=settings.seed)
    if settings.backend == "vllm_server":
        return VLLMServerSampler(ref, base_url=settings.base_url, served_name=settings.served_name,
                                 api_key_env=settings.api_key_env, max_new_tokens=settings.max_new_tokens,
                                 seed=settings.seed, concurrency=settings.concurrency)
    raise ValueError(f"unknown sampling backend {settings.backend!r}")


# --------------------------------------------------------------------- checkpoint -> model dir
def download_tree(store: Any, prefix: str, dest: Path) -> str:
    """Copy every object under ``prefix/`` to ``dest`` (verified); returns the tree's content hash.
    A copy whose recorded hash matches is reused, so a re-run downloads nothing."""
    keys = store.list(prefix.rstrip("/") + "/")
    if not keys:
        raise FileNotFoundError(f"no objects under {prefix!r} in the object store")
    infos = [store.info(k) for k in keys]
    tree = hashlib.sha256("".join(f"{i.key}\0{i.sha256}\n" for i in infos).encode()).hexdigest()[:16]
    marker = dest / ".tree_sha"
    if marker.is_file() and marker.read_text() == tree:
        return tree
    for k in keys:
        store.get_file(k, dest / k[len(prefix.rstrip("/")) + 1:])
    marker.write_text(tree)
    return tree


def checkpoint_model_ref(store: Any, dest: Path, *, asset: str = "stage1_6_checkpoint",
                         base_model_dir: str | None = None) -> ModelRef:
    """A checkpoint asset's latest artifact as a local model dir (downloaded, verified, reused).

    Reads the pointer the training phase leaves in the object store (training/refs.py:
    ``training/<stage>/_latest.json`` -> ``<output_prefix>/merged`` or ``/adapter``), so no Dagster
    instance is needed. The merged policy is preferred (self-contained; stage 1.6 merges, see
    assets/training.yaml); an adapter-only checkpoint needs ``base_model_dir`` for its base.
    FileNotFoundError when the checkpoint was never materialized.
    """
    from ..training.config import load_training_catalog
    from ..training.refs import stage_pointer, stage_resolution

    catalog = load_training_catalog()
    stage = catalog.stage(asset)
    pointer = json.loads(store.get_bytes(stage_pointer(stage.name))) if store.exists(stage_pointer(stage.name)) \
        else None
    if pointer is None:
        raise FileNotFoundError(f"{asset} has not been materialized yet (no {stage_pointer(stage.name)})")
    if pointer.get("merged"):
        res = stage_resolution(store, catalog, asset, "merged")
        download_tree(store, res.value, dest / "merged")
        return ModelRef(name=asset, model_dir=str(dest / "merged"), revision=res.data_version)
    if not base_model_dir:
        raise ValueError(f"{asset} has only an adapter (merge: false); set phases.synth.base_model_dir to its base")
    res = stage_resolution(store, catalog, asset, "adapter")
    download_tree(store, res.value, dest / "adapter")
    return ModelRef(name=asset, model_dir=base_model_dir, adapter_dir=str(dest / "adapter"), revision=res.data_version)
