"""The object-store layout: every folder the asset graph writes, and the names of its commit files.

Each table set lives under a folder with a pointer, ``<folder>/_latest.json``, written after the
objects it names (the commit point); a table written in parts is committed by
``<prefix>_SUCCESS.json``. Every module that reads or writes the store spells keys through the
functions here, so a folder is named in one place:

    raw/<source>/<revision>/...            mirror parts + _SUCCESS.json; raw/<source>/_latest.json
    normalized/<source>/_latest.json       normalize report (rows, quarantine table)
    curation/<step>/<source>/<version>/    {rows,dropped}.parquet; curation/<step>/<source>/_latest.json
    curation/dedup/_latest.json            cross-source dedup decisions
    curation/benchmark_index/_latest.json  the benchmark n-gram index
    mixtures/<name>/_latest.json           a training mixture
    models/base_model/_latest.json         the base model's stored copy
    training/<stage>/_latest.json          a stage's checkpoint
    evals/devsecops/_latest.json           the DevSecOps task set
"""

from __future__ import annotations

import json

from .object_store import ObjectStore

POINTER_NAME = "_latest.json"
SUCCESS_MARKER = "_SUCCESS.json"

DEDUP = "curation/dedup"
BENCHMARK_INDEX = "curation/benchmark_index"
BASE_MODEL = "models/base_model"
DEVSECOPS_TASKS = "evals/devsecops"

# Per-source assets whose output is one curation step's table (the planner checks it is still there).
STEP_OF_ASSET = {"sanitized_rows": "sanitized", "filtered_rows": "filtered", "curated_rows": "curated"}


def pointer(folder: str) -> str:
    """The pointer (commit file) of a folder."""
    return f"{folder.rstrip('/')}/{POINTER_NAME}"


def is_pointer(key: str) -> bool:
    return key.rsplit("/", 1)[-1] == POINTER_NAME


def raw_folder(source: str) -> str:
    return f"raw/{source}"


def normalized_folder(source: str) -> str:
    return f"normalized/{source}"


def step_folder(step: str, source: str) -> str:
    return f"curation/{step}/{source}"


def step_pointer(step: str, source: str) -> str:
    return pointer(step_folder(step, source))


def mixture_folder(name: str) -> str:
    return f"mixtures/{name}"


def stage_folder(stage: str) -> str:
    """A training stage's folder (`stage1`, `stage2_5`, ...)."""
    return f"training/{stage}"


def step_output_keys(store: ObjectStore, step: str, source: str) -> list[str]:
    """The pointer of one curation step's output for one source and the tables it names."""
    key = step_pointer(step, source)
    if not store.exists(key):
        return [key]
    latest = json.loads(store.get_bytes(key))
    return [key, latest["key"], *([latest["dropped_key"]] if latest.get("dropped_key") else [])]


def asset_output_keys(store: ObjectStore, asset: str, partition: str | None) -> list[str] | None:
    """What a per-source step asset's partition stored (pointer and tables), or None when the
    asset is not a curation step (its outputs are then known only from its metadata)."""
    if partition is None or asset not in STEP_OF_ASSET:
        return None
    return step_output_keys(store, STEP_OF_ASSET[asset], partition)
