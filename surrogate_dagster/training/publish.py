"""What a checkpoint's Hub repo holds, so that a user loads it the usual way.

- A stage that stored a merged policy (serving.py decides when): the merged model at the repo root
  (config, weights, tokenizer: ``AutoModelForCausalLM.from_pretrained(repo)``), the adapter it
  came from under ``adapter/`` (``AutoPeftModelForCausalLM.from_pretrained(repo, subfolder=...)``).
- Otherwise the adapter at the repo root.

An adapter's ``base_model_name_or_path`` is rewritten from the trainer's local path to a repo a
user can load: the pinned Hub base (with its ``revision``), the previous stage's repo (whose root
is its merged policy) or, on the local profile, the tiny base pushed as ``TINY_BASE_REPO``.
Large files travel as paths, never whole in memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..storage import ObjectStore
from ..storage.checkpoints import download_tree
from .config import StageSpec, TrainingCatalog
from .render import Resolution, ref_name

TINY_BASE_REPO = "surrogate-1-tiny-base"
ADAPTER_SUBDIR = "adapter"
# Not part of a loadable model: the trainer's run log (local paths) and any card but ours.
SKIP_NAMES = ("README.md", "debug.log")


def download(store: ObjectStore, prefix: str, dest: Path) -> Path:
    download_tree(store, prefix, dest)  # verified copy, reused when unchanged
    return dest


def tree_files(directory: Path, under: str = "") -> dict[str, Path]:
    """Every file of a model dir, by its path in the repo (hidden files and cards left out)."""
    out = {}
    for f in sorted(directory.rglob("*")):
        rel = f.relative_to(directory)
        if f.is_file() and f.name not in SKIP_NAMES and not any(p.startswith(".") for p in rel.parts):
            out[f"{under}{rel.as_posix()}"] = f
    return out


def rebase_adapter_config(raw: bytes, base_repo: str, revision: str | None) -> bytes:
    """adapter_config.json with the base a user can load (PEFT reads ``revision`` with it)."""
    cfg = json.loads(raw)
    cfg["base_model_name_or_path"] = base_repo
    cfg["revision"] = revision
    return json.dumps(cfg, indent=2, sort_keys=True).encode()


def stage_base_repo(catalog: TrainingCatalog, stage: StageSpec, org: str,
                    base: Resolution) -> tuple[str, str | None]:
    """The repo id (and revision) of the model the stage's adapter sits on."""
    ref = ref_name(stage.load_config()["base_model"]) or "base_model"
    asset = ref.split("/")[0]
    if asset == "base_model":
        return (base.value, base.revision) if base.kind == "hub" else (f"{org}/{TINY_BASE_REPO}", None)
    return f"{org}/{catalog.stage(asset).hub_repo}", None


def adapter_files(adapter_dir: Path, base_repo: str, revision: str | None, under: str = "") -> dict[str, Any]:
    files: dict[str, Any] = tree_files(adapter_dir, under)
    key = f"{under}adapter_config.json"
    files[key] = rebase_adapter_config(Path(files[key]).read_bytes(), base_repo, revision)
    return files


def policy_files(adapter_dir: Path, merged_dir: Path | None, base_repo: str,
                 revision: str | None) -> dict[str, Any]:
    """The repo's model files: merged at the root (adapter under ``adapter/``), or the adapter."""
    if merged_dir is None:
        return adapter_files(adapter_dir, base_repo, revision)
    return {**tree_files(merged_dir), **adapter_files(adapter_dir, base_repo, revision, f"{ADAPTER_SUBDIR}/")}


def push_tiny_base(hub_client, store: ObjectStore, base: Resolution, work: Path) -> str:
    """The local profile's tiny base as a model repo, so stage adapters name a loadable base."""
    files = tree_files(download(store, base.value, work / "tiny_base"))
    return hub_client.push_files("model", TINY_BASE_REPO, files, f"tiny base {base.data_version}")
