"""Uploaded checkpoints, listed file by file, and the whole one a resumed run starts from.

Each uploaded checkpoint ``<prefix>/checkpoint-N/`` gets a listing ``<prefix>/checkpoint-N.json``
= ``{"step", "dir", "files": [{"path", "size", "sha256"}, ...]}``, written after its files; the
same document is then written as ``<prefix>/latest.json``, the marker of the newest one.

A resume fetches exactly the listed files and checks each size and SHA-256 against the listing
(the store checks its own sidecar as well). A checkpoint is refused when its listing cannot be
read, a listed file is missing or differs, or the listing lacks a file the trainer needs to
continue where it stopped (:data:`RESUME_FILES`: without ``optimizer.pt`` the HF Trainer quietly
restarts Adam's moments; without ``trainer_state.json`` it restarts the step count). Then the
next older listed checkpoint is tried; when none is whole the run starts from step 0. Every
refusal is returned with its reason, for the run's log and metadata. No torch imports.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .store import StoreError, TrainerStore, _sha256_file

MARKER = "latest.json"
RESUME_FILES = ("trainer_state.json", "optimizer.pt")
_LISTING = re.compile(r"^checkpoint-(\d+)\.json$")


class DamagedCheckpoint(RuntimeError):
    """A checkpoint that cannot be resumed from (the message says why)."""


@dataclass
class ResumePlan:
    """``step``/``dir``: the checkpoint fetched (None: start from step 0); ``refused``: the
    checkpoints passed over, newest first, each ``{"checkpoint", "reason"}``."""

    step: int | None = None
    dir: str | None = None
    refused: list[dict[str, str]] = field(default_factory=list)


def listing(step: int, entries: list[dict]) -> dict[str, Any]:
    """The listing of an uploaded checkpoint from ``TrainerStore.put_tree``'s entries."""
    files = sorted(({"path": e["path"], "size": int(e["size"]), "sha256": e["sha256"]} for e in entries),
                   key=lambda f: f["path"])
    return {"step": step, "dir": f"checkpoint-{step}", "files": files}


def record_checkpoint(store: TrainerStore, prefix: str, step: int, entries: list[dict]) -> dict[str, Any]:
    """Write the checkpoint's listing, then the marker naming it (after every file is stored)."""
    doc = listing(step, entries)
    store.put_json(f"{prefix}/checkpoint-{step}.json", doc)
    store.put_json(f"{prefix}/{MARKER}", doc)
    return doc


def delete_checkpoint(store: TrainerStore, prefix: str, step: int) -> None:
    """The listing first: a listing never names files that are being deleted."""
    store.delete(f"{prefix}/checkpoint-{step}.json")
    store.delete_tree(f"{prefix}/checkpoint-{step}")


def _checked_listing(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("step"), int) or not isinstance(doc.get("dir"), str):
        raise DamagedCheckpoint("its listing has no step and folder")
    files = doc.get("files")
    if not isinstance(files, list) or not all(
            isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("size"), int)
            and isinstance(f.get("sha256"), str) for f in files):
        raise DamagedCheckpoint("its listing has no file list with sizes and SHA-256 (not verifiable)")
    if doc["dir"] != f"checkpoint-{doc['step']}":
        raise DamagedCheckpoint(f"its listing names folder {doc['dir']!r} for step {doc['step']}")
    listed = {f["path"] for f in files}
    missing = [name for name in RESUME_FILES if name not in listed]
    if missing:
        raise DamagedCheckpoint(f"its listing has no {', '.join(missing)}: resuming would lose the "
                                "optimizer state or the step count")
    if any(p.startswith("/") or ".." in p.split("/") for p in listed):
        raise DamagedCheckpoint("its listing names a path outside the checkpoint folder")
    return doc


def fetch_checkpoint(store: TrainerStore, prefix: str, doc: dict[str, Any], dest: Path) -> None:
    """Download exactly the listed files into ``dest``, each checked against the listing."""
    stored = set(store.list(f"{prefix}/{doc['dir']}/"))
    for f in doc["files"]:
        key = f"{prefix}/{doc['dir']}/{f['path']}"
        if key not in stored:
            raise DamagedCheckpoint(f"listed file {f['path']} is not in the store")
        target = dest / f["path"]
        try:
            store.get_file(key, target)
        except StoreError as exc:
            raise DamagedCheckpoint(f"listed file {f['path']}: {exc}") from exc
        sha, size = _sha256_file(target)
        if (sha, size) != (f["sha256"], f["size"]):
            raise DamagedCheckpoint(f"listed file {f['path']} has {size} bytes, sha256 {sha[:12]}; "
                                    f"the listing says {f['size']} bytes, sha256 {f['sha256'][:12]}")


def _listings(store: TrainerStore, prefix: str) -> list[tuple[int, str]]:
    found = []
    for key in store.list(f"{prefix}/"):
        m = _LISTING.match(key[len(prefix) + 1:])
        if m:
            found.append((int(m.group(1)), key))
    return sorted(found, reverse=True)


def plan_resume(store: TrainerStore, prefix: str, output_dir: Path) -> ResumePlan:
    """Fetch the newest whole checkpoint under ``prefix`` into ``output_dir/checkpoint-N``.

    Tried in order: the one ``latest.json`` names, then every listed checkpoint from the newest.
    ``output_dir`` is emptied first either way: local files past the uploaded checkpoint, or of
    another attempt, are not trusted."""
    plan = ResumePlan()
    candidates: list[tuple[str, str]] = []  # (label, key of the listing)
    if store.exists(f"{prefix}/{MARKER}"):
        candidates.append((MARKER, f"{prefix}/{MARKER}"))
    candidates += [(f"checkpoint-{step}", key) for step, key in _listings(store, prefix)]
    tried: set[str] = set()
    for label, key in candidates:
        if output_dir.exists():
            shutil.rmtree(output_dir)
        try:
            try:
                doc = _checked_listing(store.get_json(key))
            except (StoreError, json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise DamagedCheckpoint(f"its listing {key} cannot be read: {exc}") from exc
            same = json.dumps(doc, sort_keys=True)
            if same in tried:  # latest.json's own listing, already refused or fetched
                continue
            tried.add(same)
            fetch_checkpoint(store, prefix, doc, output_dir / doc["dir"])
        except DamagedCheckpoint as exc:
            name = label if label != MARKER else f"{MARKER} ({_named_dir(store, key)})"
            plan.refused.append({"checkpoint": name, "reason": str(exc)})
            continue
        plan.step, plan.dir = doc["step"], doc["dir"]
        return plan
    if output_dir.exists():
        shutil.rmtree(output_dir)
    return plan


def _named_dir(store: TrainerStore, key: str) -> str:
    try:
        doc = store.get_json(key)
        return str(doc.get("dir", "?")) if isinstance(doc, dict) else "?"
    except (StoreError, ValueError):
        return "unreadable"


def trained_steps(output_dir: Path) -> int | None:
    """The ``global_step`` of the newest ``checkpoint-N/trainer_state.json`` in ``output_dir``:
    what the trainer itself recorded as trained (None when no checkpoint was saved)."""
    states = []
    for path in output_dir.glob("checkpoint-*/trainer_state.json"):
        m = re.fullmatch(r"checkpoint-(\d+)", path.parent.name)
        if m:
            states.append((int(m.group(1)), path))
    if not states:
        return None
    return int(json.loads(max(states)[1].read_text())["global_step"])
