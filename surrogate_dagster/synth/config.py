"""Typed profile sections of the synth group (``phases.llm``, ``phases.synth``) and where the group
keeps its outputs in the object store. Dagster-free.

``phases.llm`` says which LLM endpoint a deployment uses and with which models, output caps, prices
and budget. Values it leaves out come from the catalog (``assets/synth.yaml``), so the local
profile only names its endpoint while production spells out what it pays for. ``base_url``:

- absent / null: the Anthropic API (the key is read from the env var NAMED by ``api_key_env``);
- ``local``: the credential-free stand-in (``llm/local_server.py``), started on 127.0.0.1 for the
  duration of a step by :class:`~surrogate_dagster.synth.resource.LLMResource`;
- ``http://...`` / ``https://...``: any server that speaks the Messages API.

``phases.synth`` holds per-deployment sizes (the scenario target, how many prompts feed the
execution-graded pairs) and how completions are sampled for them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import Field, StrictInt, field_validator

from ..catalog.loader import validate_mapping
from ..catalog.models import Money, Strict
from .catalog import ROLES, PriceCfg, known_roles, positive_max_tokens

from ..metadata import attach_table_metadata
from ..paths import ASSETS_DIR
from ..storage import layout
from ..storage.parquet_io import parquet_bytes_to_rows, rows_to_parquet_bytes

LOCAL_BASE_URL = "local"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@functools.lru_cache(maxsize=1)
def synth_catalog() -> dict[str, Any]:
    """``assets/synth.yaml``, validated (seeds, target_count, batch_size, models, prices...)."""
    from .scenarios import load_synth_config

    return load_synth_config(ASSETS_DIR / "synth.yaml")




class LLMProfile(Strict):
    """The profile's ``phases.llm`` section (see the module docstring)."""

    base_url: str | None = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    models: dict[str, str] = Field(default_factory=dict)
    max_tokens: dict[str, StrictInt] = Field(default_factory=dict)
    prices_per_mtok: dict[str, PriceCfg] = Field(default_factory=dict)
    budget_usd: Money | None = None
    temperature: float | None = Field(default=None, ge=0, le=1)
    timeout_s: float = Field(600.0, gt=0)
    max_attempts: StrictInt = Field(6, ge=1)
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    retry_after_cap_s: float = Field(120.0, ge=0)
    breaker_threshold: StrictInt = Field(5, ge=1)
    breaker_reset_s: float = Field(60.0, ge=0)
    # Prompt caching of the repeated system prompts (planner, simulator, judges, scenario writer).
    prompt_caching: bool = True
    # The judges and the scenario writer through the Message Batches API (half price, results
    # within 24 h); polled from batch_poll_s, each wait 1.5x longer, up to batch_poll_max_s.
    message_batches: bool = True
    batch_poll_s: float = Field(1.0, gt=0)
    batch_poll_max_s: float = Field(300.0, gt=0)
    batch_max_resubmits: StrictInt = Field(1, ge=0, description="new batches for expired requests before direct calls")

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and v != LOCAL_BASE_URL and not v.startswith(("http://", "https://")):
            raise ValueError(f"must be null (Anthropic), '{LOCAL_BASE_URL}' (stand-in) or an http(s) URL")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        # A pasted key ("sk-ant-...") is not a variable name: refuse it rather than carry a secret.
        if not _ENV_NAME.match(v):
            raise ValueError("must be the NAME of an environment variable, never the key itself")
        return v

    @field_validator("max_tokens")
    @classmethod
    def _positive(cls, v: dict[str, int]) -> dict[str, int]:
        return positive_max_tokens(v)

    @field_validator("models", "max_tokens")
    @classmethod
    def _roles(cls, v: dict[str, Any]) -> dict[str, Any]:
        return known_roles(v)


class ResolvedLLM(Strict):
    """``phases.llm`` merged over the catalog: what the LLM resource is built from."""

    base_url: str | None
    api_key_env: str
    models: dict[str, str]
    max_tokens: dict[str, StrictInt]
    prices_per_mtok: dict[str, dict[str, float]]
    budget_usd: float
    temperature: float | None
    timeout_s: float
    max_attempts: StrictInt
    backoff_base_s: float
    backoff_max_s: float
    retry_after_cap_s: float
    breaker_threshold: StrictInt
    breaker_reset_s: float
    prompt_caching: bool
    message_batches: bool
    batch_poll_s: float
    batch_poll_max_s: float
    batch_max_resubmits: StrictInt


def resolve_llm(section: dict[str, Any] | None, catalog: dict[str, Any], source: str = "profile") -> ResolvedLLM:
    """Validate ``phases.llm`` and fill what it omits from the catalog; every role must end up with
    a model, an output cap and a price for its model (a missing price would stop a paid run midway).
    ``source`` (the profile's file) starts each problem's line: ``<source>: phases.llm.<key>: <reason>``."""
    prof = validate_mapping(LLMProfile, section or {}, source, "phases.llm")
    models = {**catalog.get("models", {}), **prof.models}
    max_tokens = {**catalog.get("max_tokens", {}), **prof.max_tokens}
    prices = {m: PriceCfg(**p).model_dump(exclude_none=True) for m, p in catalog.get("prices_per_mtok", {}).items()}
    prices.update({m: p.model_dump(exclude_none=True) for m, p in prof.prices_per_mtok.items()})
    problems = [f"no model for role {r!r}" for r in ROLES if r not in models]
    problems += [f"no max_tokens for role {r!r}" for r in ROLES if r not in max_tokens]
    problems += [f"no price for model {m!r} (role {r})" for r, m in models.items() if m not in prices]
    if problems:
        raise ValueError("phases.llm: " + "; ".join(problems))
    budget = prof.budget_usd if prof.budget_usd is not None else float(catalog.get("budget_usd", 200.0))
    data = prof.model_dump(exclude={"models", "max_tokens", "prices_per_mtok", "budget_usd"})
    return ResolvedLLM(models=models, max_tokens=max_tokens, prices_per_mtok=prices, budget_usd=budget, **data)


class SynthProfile(Strict):
    """The profile's ``phases.synth`` section."""

    # Scenarios to build; at most the catalog's target_count, whose batches are the partitions.
    target_count: StrictInt | None = Field(default=None, ge=1)
    sample_rows: StrictInt = Field(20, ge=0, description="scenarios shown in the metadata table")
    sample_traces: StrictInt = Field(3, ge=0, description="kept and rejected traces rendered in metadata")
    # -- execution-graded pairs
    pair_sources: list[str] | None = Field(default=None, description="None: assets/synth.yaml exec_pairs.sources")
    max_prompts_per_source: StrictInt | None = Field(default=None, ge=1, description="null: every prompt with tests")
    devsecops: bool = True
    max_devsecops_prompts: StrictInt | None = Field(default=None, ge=1)
    max_prompt_chars: StrictInt = Field(6000, ge=100)
    samples_per_prompt: StrictInt = Field(4, ge=2)
    temperature: float = Field(1.0, gt=0)
    max_new_tokens: StrictInt = Field(1024, ge=1)
    seed: StrictInt = 0
    # None: assets/synth.yaml exec_pairs (max_prompts, min_margin, max_pairs_per_prompt)
    max_prompts: StrictInt | None = Field(default=None, ge=1)
    min_margin: float | None = Field(default=None, gt=0, le=1)
    max_pairs_per_prompt: StrictInt | None = Field(default=None, ge=1)
    inject_pool: bool = Field(False, description="grade each prompt's reference answer beside the samples")
    grader_workers: StrictInt = Field(2, ge=1)
    # -- sampling backend (transformers in-process locally; a vLLM server in the GPU image)
    backend: Literal["transformers", "vllm_server"] = "transformers"
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: StrictInt = Field(8, ge=1)
    base_url: str | None = None
    api_key_env: str | None = None
    served_name: str | None = None
    concurrency: StrictInt = Field(16, ge=1)
    model_dir: str | None = Field(default=None, description="sample from this HF dir instead of the checkpoint")
    base_model_dir: str | None = Field(default=None, description="base for an adapter-only checkpoint")
    work_dir: str = "var/work/synth"

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not _ENV_NAME.match(v):
            raise ValueError("must be the NAME of an environment variable, never the key itself")
        return v


def resolve_synth(section: dict[str, Any] | None, catalog: dict[str, Any], source: str = "profile") -> SynthProfile:
    """Validate ``phases.synth``; the target defaults to, and may not exceed, the catalog's. Problems
    read ``<source>: phases.synth.<key>: <reason>``."""
    prof = validate_mapping(SynthProfile, section or {}, source, "phases.synth")
    cat_target = int(catalog["target_count"])
    if prof.backend == "vllm_server" and not prof.base_url:
        raise ValueError("phases.synth: backend vllm_server needs base_url")
    if prof.target_count is None:
        return prof.model_copy(update={"target_count": cat_target})
    if prof.target_count > cat_target:
        raise ValueError(f"phases.synth.target_count {prof.target_count} exceeds the catalog's {cat_target}: "
                         "the traces asset's partitions cover only the catalog's target")
    return prof


# ---------------------------------------------------------------------------- object-store layout
# Table sets, each <folder>/<version>/<table>.parquet + <folder>/_latest.json (the folders are
# named in storage/layout.py): synth/scenarios (scenarios), synth/orchestrator_traces/<batch>
# (rows, rejected), synth/exec_graded_pairs (rows, grades). The LLM response cache and the cost
# ledger live under llm-cache/ and llm-ledger/ (llm/).


def content_version(*parts: Any) -> str:
    """A short content hash (data versions, storage folders)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
                          .encode()).hexdigest()[:16]


def write_table_set(store: Any, prefix: str, version: str, tables: dict[str, list[dict]],
                    pointer: dict[str, Any]) -> dict[str, Any]:
    """Write ``tables`` as Parquet under ``prefix/version/`` and ``prefix/_latest.json`` LAST (the
    commit point: a reader never sees a half-written set). Empty tables are recorded, not written."""
    keys: dict[str, str | None] = {}
    for name, rows in tables.items():
        if rows:
            key = f"{prefix}/{version}/{name}.parquet"
            store.put_bytes(key, rows_to_parquet_bytes(rows))
            keys[name] = key
        else:
            keys[name] = None
    doc = {**pointer, "version": version, "keys": keys, "counts": {n: len(r) for n, r in tables.items()}}
    store.put_bytes(layout.pointer(prefix), json.dumps(doc, sort_keys=True, default=str).encode())
    attach_table_metadata(next(iter(tables.values()), []))  # the first table is the set's rows
    return doc


def read_pointer(store: Any, prefix: str) -> dict[str, Any] | None:
    """The ``_latest.json`` of a table set, or None when it was never written."""
    key = layout.pointer(prefix)
    return json.loads(store.get_bytes(key)) if store.exists(key) else None


def read_table(store: Any, pointer: dict[str, Any], name: str) -> list[dict]:
    """One table of a set (``[]`` when it was empty)."""
    key = pointer["keys"].get(name)
    return parquet_bytes_to_rows(store.get_bytes(key)) if key else []


SCENARIOS_PREFIX = layout.SYNTH_SCENARIOS
TRACES_PREFIX = layout.SYNTH_TRACES
PAIRS_PREFIX = layout.SYNTH_PAIRS
SCENARIOS_LEDGER_KEY = "scenarios"  # the scenario writer's spend, beside the batches' in llm-ledger/


def trace_batch_keys(catalog: dict[str, Any] | None = None) -> list[str]:
    """The traces asset's partitions: the catalog's target in batches (batch-000, batch-001, ...)."""
    from .scenarios import batch_keys

    cat = catalog or synth_catalog()
    return batch_keys(int(cat["target_count"]), int(cat["batch_size"]))


def ledger_keys(catalog: dict[str, Any] | None = None) -> list[str]:
    """Every ledger entry that counts against the budget: the scenario writer and all batches."""
    return [SCENARIOS_LEDGER_KEY, *trace_batch_keys(catalog)]


def load_scenarios(store: Any) -> tuple[dict[str, Any], list[dict]]:
    """(pointer, scenarios) of the latest ``synth_scenarios``; FileNotFoundError when never built."""
    ptr = read_pointer(store, SCENARIOS_PREFIX)
    if ptr is None:
        raise FileNotFoundError(f"synth_scenarios has not been materialized (no {layout.pointer(SCENARIOS_PREFIX)})")
    return ptr, read_table(store, ptr, "scenarios")


def orchestrator_traces_status(store: Any) -> dict[str, list[str]]:
    """Which batches hold traces of the current scenario set (``used``), were built from an older
    set (``stale``: left out of the mixture) or were never materialized (``missing``)."""
    return _collect_traces(store, read_rows=False)[1]


def load_orchestrator_traces(store: Any, *, required: bool = True) -> list[dict]:
    """Kept orchestrator traces (normalized SFT rows, source ``synth_orchestrator``) of every batch
    built from the CURRENT scenario set, in batch order, for the agent SFT mixture. Batches built
    from an older scenario set are left out (see :func:`orchestrator_traces_status`).
    ``required=False`` returns ``[]`` instead of raising when there are no scenarios yet."""
    try:
        return _collect_traces(store, read_rows=True)[0]
    except FileNotFoundError:
        if required:
            raise
        return []


def _collect_traces(store: Any, read_rows: bool) -> tuple[list[dict], dict[str, list[str]]]:
    sptr, _ = load_scenarios(store)
    rows: list[dict] = []
    report: dict[str, list[str]] = {"used": [], "stale": [], "missing": []}
    for batch in trace_batch_keys():
        ptr = read_pointer(store, layout.trace_batch_folder(batch))
        if ptr is None:
            report["missing"].append(batch)
        elif ptr.get("scenarios_version") != sptr["version"]:
            report["stale"].append(batch)
        else:
            report["used"].append(batch)
            if read_rows:
                rows.extend(read_table(store, ptr, "rows"))
    return rows, report


def load_exec_graded_pairs(store: Any, *, required: bool = True) -> list[dict]:
    """The latest execution-graded DPO pairs (normalized rows, source ``exec_graded``)."""
    ptr = read_pointer(store, PAIRS_PREFIX)
    if ptr is None:
        if required:
            raise FileNotFoundError(f"exec_graded_pairs has not been materialized (no {layout.pointer(PAIRS_PREFIX)})")
        return []
    return read_table(store, ptr, "rows")
