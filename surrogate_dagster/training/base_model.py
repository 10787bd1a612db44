"""The base model: the pinned Hub model (production, observed) or the tiny local one (built)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..storage import ObjectStore
from ..storage.layout import base_model_folder
from .config import BaseModelSpec, TrainingCatalog
from .refs import BASE_POINTER, mixture_resolution
from .render import stable_hash

TINY_BUILDER_VERSION = "tiny-qwen2-v1"  # bump when tiny_base.py changes what it builds


@dataclass
class BuiltBase:
    prefix: str
    data_version: str
    vocab: int
    parameters: int
    rows: int
    mixtures: dict[str, str]
    reused: bool


def _mixture_rows(store: ObjectStore, key: str) -> Iterator[dict]:
    for line in store.get_bytes(key).decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def build_tiny_base(store: ObjectStore, catalog: TrainingCatalog) -> BuiltBase:
    """Train the tokenizer on the mixtures' text, build the tiny Qwen2, store it (content-versioned)."""
    from .tiny_base import TinySpec, build_tiny_qwen2, row_texts

    tiny = catalog.base_model.tiny
    mixtures = {name: mixture_resolution(store, name) for name in tiny.tokenizer_mixtures}
    versions = {name: r.data_version for name, r in mixtures.items()}
    version = stable_hash({"builder": TINY_BUILDER_VERSION, "spec": tiny.model_dump(), "mixtures": versions})
    prefix = base_model_folder(version)
    if store.exists(f"{prefix}/build.json"):
        info = json.loads(store.get_bytes(f"{prefix}/build.json"))
        reused = True
    else:
        # Round-robin over mixtures so a large one cannot crowd the others out of the vocabulary.
        per_mixture = max(1, tiny.tokenizer_max_rows // max(1, len(mixtures)))
        texts: list[str] = []
        rows = 0
        for r in mixtures.values():
            for i, row in enumerate(_mixture_rows(store, r.value)):
                if i >= per_mixture:
                    break
                texts.extend(row_texts(row))
                rows += 1
        if not texts:
            raise ValueError(f"the mixtures {sorted(mixtures)} hold no text to train a tokenizer on")
        spec = TinySpec(vocab_size=tiny.vocab_size, hidden_size=tiny.hidden_size,
                        intermediate_size=tiny.intermediate_size, num_hidden_layers=tiny.num_hidden_layers,
                        num_attention_heads=tiny.num_attention_heads, num_key_value_heads=tiny.num_key_value_heads,
                        tie_word_embeddings=tiny.tie_word_embeddings, seed=tiny.seed)
        with tempfile.TemporaryDirectory() as tmp:
            built = build_tiny_qwen2(texts, Path(tmp) / "model", spec)
            for path in sorted((Path(tmp) / "model").iterdir()):
                store.put_file(f"{prefix}/model/{path.name}", path)
        info = {"vocab": built["vocab"], "parameters": built["parameters"], "rows": rows, "mixtures": versions}
        store.put_bytes(f"{prefix}/build.json", json.dumps(info).encode())
        reused = False
    store.put_bytes(BASE_POINTER, json.dumps({"prefix": f"{prefix}/model", "data_version": version}).encode())
    return BuiltBase(prefix=f"{prefix}/model", data_version=version, vocab=info["vocab"],
                     parameters=info["parameters"], rows=info["rows"], mixtures=versions, reused=reused)


def hub_model_revision(spec: BaseModelSpec, hub_cfg) -> dict[str, str]:
    """Check the pin exists on the Hub (or the offline mirror); report where `main` is now."""
    if hub_cfg.mode == "offline":
        from ..paths import resolve_repo_path

        repo = resolve_repo_path(hub_cfg.mirror_dir) / "models" / spec.hf_id
        head_file = repo / "revision.txt"
        if not head_file.is_file():
            raise FileNotFoundError(f"offline hub: no model mirror of {spec.hf_id} at {repo}")
        head = head_file.read_text().strip()
        known = {head} | {p.name[1:] for p in repo.glob("@*")}
        if spec.revision not in known:
            raise LookupError(f"offline hub: {spec.hf_id} has no revision {spec.revision}")
        return {"pinned": spec.revision, "main": head}
    import os

    from huggingface_hub import HfApi

    api = HfApi(token=os.environ.get(hub_cfg.token_env) or None)
    pinned = api.model_info(spec.hf_id, revision=spec.revision).sha
    if pinned != spec.revision:
        raise LookupError(f"{spec.hf_id}@{spec.revision} resolved to {pinned}")
    return {"pinned": pinned, "main": api.model_info(spec.hf_id).sha}
