"""Resolve a stage file's ``asset://`` references to what is in the object store now (or the Hub pin).

Each upstream asset leaves a small pointer in the store when it materializes (keys:
storage/layout.py):

    mixtures/<name>/_latest.json         {"key": ".../train.jsonl", "data_version": ...}   (curation)
    models/base_model/_latest.json       {"prefix": ..., "data_version": ...}     (local tiny base)
    training/<stage>/_latest.json        a stage's checkpoint (storage/checkpoints.py)

so a stage run needs no Dagster instance to find its inputs, and records their data versions.
An unfinished run keeps the mixtures it started from (run_inputs.py), whatever `_latest` says now.
"""

from __future__ import annotations

import json

from ..storage import ObjectStore
from ..storage.checkpoints import latest_checkpoint
from ..storage.layout import BASE_MODEL, mixture_pointer, pointer
from .config import StageSpec, TrainingCatalog
from .render import Resolution, stage_refs

BASE_POINTER = pointer(BASE_MODEL)


def _pointer(store: ObjectStore, key: str, what: str) -> dict:
    if not store.exists(key):
        raise FileNotFoundError(f"{what} has not been materialized yet (no {key} in {store!r})")
    return json.loads(store.get_bytes(key))


def mixture_resolution(store: ObjectStore, asset: str) -> Resolution:
    """The mixture's latest train.jsonl, versioned by the curation's data version.

    The asset `code_sft_mixture` stores under mixtures/code_sft/ (curation/mixtures.py).
    """
    name = asset.removesuffix("_mixture")
    # One read of the pointer: a push between two reads would pair one version's key with
    # another's data version.
    latest = _pointer(store, mixture_pointer(name), f"mixture {asset}")
    key = latest["key"]
    return Resolution("key", key, str(latest.get("data_version") or store.info(key).sha256[:16]))


def base_model_resolution(store: ObjectStore, catalog: TrainingCatalog, source: str) -> Resolution:
    """``hub``: the pinned Hub model (production); ``tiny``: the local profile's built model."""
    if source == "hub":
        spec = catalog.base_model
        return Resolution("hub", spec.hf_id, spec.revision, revision=spec.revision)
    latest = _pointer(store, BASE_POINTER, "base_model")
    return Resolution("prefix", latest["prefix"], latest["data_version"])


def stage_resolution(store: ObjectStore, catalog: TrainingCatalog, asset: str, part: str) -> Resolution:
    """A previous stage's ``adapter`` or ``merged`` policy, at its latest run."""
    ckpt = latest_checkpoint(store, catalog.stage(asset).name, asset)
    try:
        prefix = ckpt.part_prefix(part)
    except ValueError as e:
        raise ValueError(f"asset://{asset}/{part}: {e}") from None
    return Resolution("prefix", prefix, ckpt.data_version)


def resolve_stage(store: ObjectStore, catalog: TrainingCatalog, stage: StageSpec,
                  base_source: str) -> dict[str, Resolution]:
    """Every reference of one stage file."""
    out: dict[str, Resolution] = {}
    stage_assets = {s.asset for s in catalog.stages}
    for ref in stage_refs(stage.load_config()):
        asset, _, part = ref.partition("/")
        if asset == "base_model":
            out[ref] = base_model_resolution(store, catalog, base_source)
        elif asset in stage_assets:
            out[ref] = stage_resolution(store, catalog, asset, part)
        else:
            out[ref] = mixture_resolution(store, asset)
    return out
