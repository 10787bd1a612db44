"""The object-store layout: every folder the asset graph writes, and the names of its commit files.

Each table set lives under a folder with a pointer, ``<folder>/_latest.json``, written after the
objects it names (the commit point); a table written in parts is committed by
``<prefix>_SUCCESS.json``. Every module that reads or writes the store spells keys through the
functions here, so a folder is named in one place:

    raw/<source>/<revision>/...            mirror parts + _SUCCESS.json; raw/<source>/_latest.json
    normalized/<source>/<revision>/        {rows,quarantine}.parquet; normalized/<source>/_latest.json
    curation/<step>/<source>/<version>/    {rows,dropped}.parquet; curation/<step>/<source>/_latest.json
    curation/minhash/<source>/             signature tarballs
    curation/decont/<source>/              decontamination matches (a cache)
    curation/dedup/_latest.json            cross-source dedup decisions
    curation/benchmark_index/_latest.json  the benchmark n-gram index
    synth/scenarios/_latest.json           synthesized scenarios (a table set)
    synth/orchestrator_traces/<batch>/     one batch of orchestrator traces (a table set)
    synth/exec_graded_pairs/_latest.json   execution-graded pairs (a table set)
    mixtures/<name>/<version>/             train.jsonl, README.md, gates/; mixtures/<name>/_latest.json
    views/mixtures/<mixture>/<version>/    a mixture rendered with the base model's chat template
    models/base_model/<version>/           the tiny base; models/base_model/_latest.json
    training/<stage>/<fingerprint>/        a run's outputs; training/<stage>/_latest.json (checkpoints.py),
                                           training/<stage>/_started.json (the run's inputs)
    evals/devsecops/_latest.json           the DevSecOps task set
    evals/reports/<checkpoint>/<bench>/    report samples and summaries
    evals/groundtruth/<dataset>/           EvalPlus expected outputs (a cache)
    evals/scoreboard.json                  scores across checkpoints
    releases/<repo>/<revision>/            a release attempt's outcome.md and knowledge_index.md;
                                           releases/<repo>/_latest.json

Two layers below or beside this one name their own keys: the canary manifest
(``evals/canaries/manifest.json``, canary.CANARY_KEY) and the LLM layer's ``llm-cache/``,
``llm-ledger/`` and ``llm-batches/`` (llm/cache.py, ledger.py, batches.py, written against a
store protocol, not this package's stores).
"""

from __future__ import annotations

import json

from .object_store import ObjectStore

POINTER_NAME = "_latest.json"
SUCCESS_MARKER = "_SUCCESS.json"
STARTED_NAME = "_started.json"  # a training run's start record

RAW = "raw"
NORMALIZED = "normalized"
CURATION = "curation"
MIXTURES = "mixtures"
TRAINING = "training"

DEDUP = f"{CURATION}/dedup"
BENCHMARK_INDEX = f"{CURATION}/benchmark_index"
MINHASH = f"{CURATION}/minhash"
DECONTAM = f"{CURATION}/decont"
SYNTH_SCENARIOS = "synth/scenarios"
SYNTH_TRACES = "synth/orchestrator_traces"
SYNTH_PAIRS = "synth/exec_graded_pairs"
MIXTURE_VIEWS = "views/mixtures"
BASE_MODEL = "models/base_model"
DEVSECOPS_TASKS = "evals/devsecops"
EVAL_REPORTS = "evals/reports"
EVAL_GROUNDTRUTH = "evals/groundtruth"
SCOREBOARD = "evals/scoreboard.json"
RELEASES = "releases"

# Per-source assets whose output is one curation step's table (the planner checks it is still there).
STEP_OF_ASSET = {"sanitized_rows": "sanitized", "filtered_rows": "filtered", "curated_rows": "curated"}


def pointer(folder: str) -> str:
    """The pointer (commit file) of a folder."""
    return f"{folder.rstrip('/')}/{POINTER_NAME}"


def is_pointer(key: str) -> bool:
    return key.rsplit("/", 1)[-1] == POINTER_NAME


def success_marker(prefix: str) -> str:
    """The marker committing the table written in parts under ``prefix`` (a folder, ending in '/')."""
    return prefix + SUCCESS_MARKER


def child_pointers(store: ObjectStore, root: str) -> dict[str, str]:
    """``{name: pointer key}`` of the folders ``<root>/<name>/`` that hold a pointer."""
    prefix = root.rstrip("/") + "/"
    out = {}
    for key in store.list(prefix):
        name, _, rest = key[len(prefix):].partition("/")
        if rest == POINTER_NAME:
            out[name] = key
    return out


def raw_folder(source: str) -> str:
    return f"{RAW}/{source}"


def raw_pointer(source: str) -> str:
    return pointer(raw_folder(source))


def raw_revision_prefix(source: str, revision: str) -> str:
    """The folder one mirrored revision's parts and success marker live under (ends in '/')."""
    return f"{raw_folder(source)}/{revision}/"


def raw_revisions(store: ObjectStore) -> dict[str, list[str]]:
    """The revisions stored under ``raw/`` per source (a revision folder with at least one object)."""
    out: dict[str, set[str]] = {}
    for key in store.list(f"{RAW}/"):
        parts = key.split("/")
        if len(parts) > 3:
            out.setdefault(parts[1], set()).add(parts[2])
    return {s: sorted(v) for s, v in out.items()}


def normalized_folder(source: str) -> str:
    return f"{NORMALIZED}/{source}"


def normalized_pointer(source: str) -> str:
    return pointer(normalized_folder(source))


def normalized_table(source: str, revision: str, table: str) -> str:
    """One table (``rows``, ``quarantine``) of a source normalized at one revision."""
    return f"{normalized_folder(source)}/{revision}/{table}.parquet"


def step_root(step: str) -> str:
    """The folder of one curation step (``sanitized``, ``filtered``, ``curated``, ``curated_synth``)."""
    return f"{CURATION}/{step}"


def step_folder(step: str, source: str) -> str:
    return f"{step_root(step)}/{source}"


def step_pointer(step: str, source: str) -> str:
    return pointer(step_folder(step, source))


def step_sources(store: ObjectStore, step: str) -> list[str]:
    """The sources one curation step has committed an output for, sorted."""
    return sorted(child_pointers(store, step_root(step)))


def trace_batch_folder(batch: str) -> str:
    """The table set of one orchestrator-traces batch (``batch-000``, ...)."""
    return f"{SYNTH_TRACES}/{batch}"


def mixture_folder(name: str) -> str:
    return f"{MIXTURES}/{name}"


def mixture_pointer(name: str) -> str:
    return pointer(mixture_folder(name))


def mixture_version_prefix(name: str, version: str) -> str:
    """The folder of one mixture version (train.jsonl, README.md, gates/; ends in '/')."""
    return f"{mixture_folder(name)}/{version}/"


def release_folder(repo: str) -> str:
    """The release attempts of one model repo (outcome.md, knowledge_index.md per checkpoint revision)."""
    return f"{RELEASES}/{repo}"


def mixture_view_folder(mixture: str, version: str) -> str:
    """A mixture asset's view at one version (view.json, view.md, lengths.png)."""
    return f"{MIXTURE_VIEWS}/{mixture}/{version}"


def base_model_folder(version: str) -> str:
    """One build of the tiny base model (build.json, model/)."""
    return f"{BASE_MODEL}/{version}"


def stage_folder(stage: str) -> str:
    """A training stage's folder (`stage1`, `stage2_5`, ...)."""
    return f"{TRAINING}/{stage}"


def stage_pointer(stage: str) -> str:
    """The stage's latest checkpoint (storage/checkpoints.py reads it)."""
    return pointer(stage_folder(stage))


def stage_started(stage: str) -> str:
    """The start record of the stage's latest run (training/run_inputs.py)."""
    return f"{stage_folder(stage)}/{STARTED_NAME}"


def stage_run_prefix(stage: str, fingerprint: str) -> str:
    """The folder of one stage run, named by its fingerprint (no trailing '/')."""
    return f"{stage_folder(stage)}/{fingerprint}"


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
