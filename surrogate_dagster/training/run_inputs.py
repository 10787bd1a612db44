"""The dataset versions a stage run started from, kept until the run finishes.

A stage resolves its mixtures through their pointers (`mixtures/<name>/_latest.json`, keys in
storage/layout.py), which curation rewrites whenever it pushes a new version. A run that was
killed and is materialized again (a resume, a retry) must train on the data it started with, not
on whatever was pushed meanwhile: otherwise the fingerprint changes, the checkpoints of the first
attempt are orphaned and the "resumed" stage mixes two datasets. So before launching the trainer
the stage writes

    training/<stage>/_started.json   {"fingerprint", "config_hash", "inputs": {ref: Resolution},
                                      "finished": false}

and the next materialization of the stage reuses its dataset resolutions when that run is
unfinished, has the same config hash and the same non-dataset inputs (base model, previous
stage). Once the run finishes the record is marked finished, and the next run reads `_latest`
again. Pure: no Dagster.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Callable

from ..storage import ObjectStore
from ..storage.layout import stage_started
from .render import Resolution


def started_key(stage_name: str) -> str:
    return stage_started(stage_name)


def _is_dataset(res: Resolution) -> bool:
    # Mixtures resolve to one JSONL object ("key"); models to a prefix or a Hub id.
    return res.kind == "key"


def record_start(store: ObjectStore, stage_name: str, fingerprint: str, config_hash: str,
                 inputs: dict[str, Resolution]) -> None:
    """Write the start record of a run that is about to launch."""
    store.put_bytes(started_key(stage_name), json.dumps({
        "fingerprint": fingerprint, "config_hash": config_hash, "finished": False,
        "inputs": {ref: asdict(res) for ref, res in sorted(inputs.items())},
    }, indent=1).encode())


def mark_finished(store: ObjectStore, stage_name: str, fingerprint: str) -> None:
    """Mark the start record of `fingerprint` finished (a record of another run is left alone)."""
    key = started_key(stage_name)
    if not store.exists(key):
        return
    rec = json.loads(store.get_bytes(key))
    if rec.get("fingerprint") == fingerprint and not rec.get("finished"):
        store.put_bytes(key, json.dumps({**rec, "finished": True}, indent=1).encode())


def inputs_at_start(store: ObjectStore, stage_name: str, config_hash: str, current: dict[str, Resolution],
                    log: Callable[[str], object] = print) -> tuple[dict[str, Resolution], str | None]:
    """`current` with the dataset resolutions of an unfinished run of the same recipe, if any.

    Returns the resolutions to render with and the fingerprint of the run they came from (None
    when the current `_latest` pointers are used).
    """
    key = started_key(stage_name)
    if not store.exists(key):
        return current, None
    rec = json.loads(store.get_bytes(key))
    if rec.get("finished"):
        return current, None
    started = {ref: Resolution(**res) for ref, res in (rec.get("inputs") or {}).items()}
    if rec.get("config_hash") != config_hash or set(started) != set(current):
        log(f"{stage_name}: unfinished run {rec.get('fingerprint')} had another recipe; starting a new run")
        return current, None
    models_now = {r: v for r, v in current.items() if not _is_dataset(v)}
    models_then = {r: v for r, v in started.items() if not _is_dataset(v)}
    if models_now != models_then:
        log(f"{stage_name}: unfinished run {rec.get('fingerprint')} started from other models; starting a new run")
        return current, None
    missing = [r.value for r in started.values() if _is_dataset(r) and not store.exists(r.value)]
    if missing:
        log(f"{stage_name}: unfinished run {rec.get('fingerprint')} read {missing}, no longer in the store; "
            "starting a new run")
        return current, None
    out = {ref: (started[ref] if _is_dataset(res) else res) for ref, res in current.items()}
    moved = sorted(ref for ref in out if out[ref] != current[ref])
    if moved:
        log(f"{stage_name}: resuming run {rec['fingerprint']} on the datasets it started from "
            f"({', '.join(f'{r}@{out[r].data_version}' for r in moved)}), not the newer _latest")
    return out, rec["fingerprint"]
