"""A training stage's latest checkpoint, as its pointer in the object store names it (no Dagster).

A finished stage run leaves ``training/<stage>/_latest.json`` (layout.stage_pointer):

    {"output_prefix": "training/<stage>/<fingerprint>", "data_version": "<fingerprint>", "merged": bool}

``output_prefix`` holds ``adapter/`` and, when the run stored one, ``merged/``; ``data_version`` is
the run fingerprint. The stage run writes it with :func:`write_checkpoint`; every reader (the
``asset://`` references of a stage file, the evals' model refs, the synth sampler) resolves it
through :func:`read_checkpoint` / :func:`latest_checkpoint` and copies a policy with
:func:`download_tree`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .layout import stage_pointer
from .object_store import ObjectStore

PARTS = ("adapter", "merged")


@dataclass(frozen=True)
class Checkpoint:
    stage: str
    key: str  # the pointer's key
    output_prefix: str
    data_version: str
    merged: bool

    @property
    def served_part(self) -> str:
        """The part a server loads: the merged policy when stored, else the adapter."""
        return "merged" if self.merged else "adapter"

    def part_prefix(self, part: str) -> str:
        """The store prefix of the ``adapter`` or ``merged`` policy (no trailing '/')."""
        if part not in PARTS:
            raise ValueError(f"a checkpoint has an 'adapter' and maybe a 'merged' part, not {part!r}")
        if part == "merged" and not self.merged:
            raise ValueError(f"{self.stage} is not merged (set merge: true in training.yaml)")
        return f"{self.output_prefix}/{part}"


def write_checkpoint(store: ObjectStore, stage: str, output_prefix: str, data_version: str, merged: bool) -> None:
    """Commit a finished run as the stage's latest checkpoint (written after the run's outputs)."""
    store.put_bytes(stage_pointer(stage), json.dumps({
        "output_prefix": output_prefix, "data_version": data_version, "merged": merged,
    }).encode())


def read_checkpoint(store: ObjectStore, stage: str) -> Checkpoint | None:
    """The latest checkpoint of ``stage`` (a stage name: ``stage1_6``), or None if never trained;
    ValueError when the pointer lacks ``output_prefix`` or ``data_version``."""
    key = stage_pointer(stage)
    if not store.exists(key):
        return None
    doc = json.loads(store.get_bytes(key))
    missing = [k for k in ("output_prefix", "data_version") if not doc.get(k)]
    if missing:
        raise ValueError(f"{key}: pointer without {missing}")
    return Checkpoint(stage=stage, key=key, output_prefix=doc["output_prefix"], data_version=doc["data_version"],
                      merged=bool(doc.get("merged")))


def latest_checkpoint(store: ObjectStore, stage: str, what: str | None = None) -> Checkpoint:
    """:func:`read_checkpoint`, FileNotFoundError naming ``what`` (default the stage) if never trained."""
    ckpt = read_checkpoint(store, stage)
    if ckpt is None:
        raise FileNotFoundError(f"{what or stage} has not been materialized yet (no {stage_pointer(stage)} "
                                f"in {store!r})")
    return ckpt


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
