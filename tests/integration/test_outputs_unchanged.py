"""The curation chain, the five mixtures and the rendered stage configs give the recorded outputs.

``outputs_baseline.json`` (next to this file) was recorded from commit f967367. It holds what the
real asset definitions write, materialized with Dagster on an ephemeral instance into a temporary
local object store, on the shipped fixtures (``fixtures/hub``, the offline hub mirror) with the
local profile's curation settings (spaCy NER, rubric edu scorer, its threshold), read back from
the store:

- per source partition (and per helper partition): the mirrored rows (``source_rows``: count,
  digest, the success marker, quarantine reasons), the normalized rows (ids, digest, quarantine
  reasons), ``sanitized_rows`` (rows, findings per category, the canary shadow audit),
  ``filtered_rows`` and ``curated_rows`` (rows, every dropped row's id and reason, the dropped
  table's digest); each step's data version;
- ``dedup_decisions`` (the decision map: counts by reason and source, its digest),
  ``benchmark_ngram_index`` (a digest of the index bytes);
- the five mixtures (``train.jsonl`` and dataset-card digests, rows per source, capped and
  unreadable rows). ``agent_sft`` and ``code_dpo`` also take a synthesized set (orchestrator
  traces, execution-graded pairs), which needs LLM and training steps: here both sets are empty
  (their loaders return no rows) and ``curated_orchestrator_traces`` /
  ``curated_exec_graded_pairs`` are materialized on them, so those mixtures hold the sources' rows;
- every training stage's trainer run spec (the rendered axolotl config, inputs, references,
  config hash, fingerprint) for the ``local``, ``production`` and ``cluster`` profiles, resolved by
  ``training.refs.resolve_stage`` against the mixtures above and stand-in pointers for the tiny
  base model and the previous stages' checkpoints (no model is built or trained);
- the object-store keys written, except the name parts that carry a code or MinHash-geometry
  version (signature tarballs, the decontamination cache): those are shown as ``<version>``.

Rows are kept as sha256 digests of their canonical JSON (sorted keys); a per-row digest, keyed by
row id, names the rows that changed. Step timings and other run-dependent fields are left out.
Worker counts are 1 and the row-block executor in process: results never depend on them
(test_curation_materialize.py checks forked workers write the same outputs).

Regenerate only when an output is meant to change:
``.venv/bin/python tests/integration/test_outputs_unchanged.py --record``. The recorder uses only
APIs present both here and at commit f967367 (keys through storage/layout.py where it exists), so
it also records with the package of another checkout, a worktree of an older commit, writing the
baseline next to this file: ``cd <worktree> && SURROGATE_SHARED_DIR=<repo>/../shared
PYTHONPATH=<worktree> <repo>/.venv/bin/python <repo>/tests/integration/test_outputs_unchanged.py
--record`` (it prints the package it imported).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

BASELINE = Path(__file__).with_name("outputs_baseline.json")
# The canary manifest eval_canaries leaves in the store (4 per kind, as assets/evals.yaml asks), with
# a fixed salt and a rate that picks about half the rows for a shadow copy, so the shadow audit
# sanitizes many planted secrets.
CANARIES = {"per_kind": 4, "rate": 0.5, "salt": "outputs-unchanged"}
STEPS = ("sanitized", "filtered", "curated")
PROFILES = ("local", "production", "cluster")
# Object-store key parts that name a code version or the MinHash geometry, which the recorded
# outputs do not depend on: replaced by <version> in the recorded key list.
VOLATILE_KEYS = [
    (re.compile(r"^(curation/minhash/[^/]+/)[^/]+(\.tar\.gz)$"), r"\1<version>\2"),
    (re.compile(r"^(curation/decont/[^/]+/[0-9a-f]+-[0-9a-f]+-)[^/]+(\.json)$"), r"\1<version>\2"),
]


# -- keys (storage/layout.py where it exists) -------------------------------------------------

try:
    from surrogate_dagster.storage.layout import (
        BASE_MODEL,
        BENCHMARK_INDEX,
        DEDUP,
        mixture_pointer,
        normalized_pointer,
        pointer,
        raw_pointer,
        stage_pointer,
    )
except ImportError:  # a tree whose keys are spelled where they are used
    BASE_MODEL, BENCHMARK_INDEX, DEDUP = "models/base_model", "curation/benchmark_index", "curation/dedup"

    def pointer(folder: str) -> str:
        return f"{folder.rstrip('/')}/_latest.json"

    def raw_pointer(source: str) -> str:
        return f"raw/{source}/_latest.json"

    def normalized_pointer(source: str) -> str:
        return f"normalized/{source}/_latest.json"

    def mixture_pointer(name: str) -> str:
        return f"mixtures/{name}/_latest.json"

    def stage_pointer(stage: str) -> str:
        return f"training/{stage}/_latest.json"


# -- digests ------------------------------------------------------------------------------------

def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str).encode("utf-8", "surrogatepass")


def digest(obj) -> str:
    return hashlib.sha256(canonical(obj)).hexdigest()


def rows_record(rows: list[dict]) -> dict:
    """Count, digest of the id list and of the rows, and a short digest of each row by id."""
    return {"rows": len(rows), "ids_sha256": digest([r["id"] for r in rows]), "sha256": digest(rows),
            "row_digests": {r["id"]: digest(r)[:12] for r in rows}}


def counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


# -- materializing -------------------------------------------------------------------------------

def _resources(tmp: Path) -> dict:
    """The local profile's hub and curation settings, every writable path under ``tmp``."""
    from surrogate_dagster.catalog import load_profile
    from surrogate_dagster.curation.config import CurationProfile
    from surrogate_dagster.curation.resource import CurationSettings
    from surrogate_dagster.paths import FIXTURES_DIR, resolve_repo_path
    from surrogate_dagster.resources import HubResource, ObjectStoreResource

    profile = load_profile("local")
    cur = CurationProfile(**profile.phases.get("curation", {}))
    return {
        "object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(FIXTURES_DIR / "hub"), push_dir=str(tmp / "pushes"),
                           org=profile.hub.org),
        "curation": CurationSettings(ner_model=cur.ner_model, edu_scorer=cur.edu_scorer,
                                     edu_threshold=cur.edu_threshold,
                                     livecodebench_source=cur.livecodebench_source,
                                     benchmarks_dir=str(resolve_repo_path(cur.benchmarks_dir)),
                                     work_dir=str(tmp / "work"), workers=1,
                                     datatrove_executor={"kind": "in_process"}),
    }


@contextlib.contextmanager
def _empty_synth_sets():
    """The synthesized sets' loaders return no rows (their producers need LLM and training steps)."""
    from surrogate_dagster.synth import curated_assets

    saved = dict(curated_assets._LOADERS)
    for name in saved:
        curated_assets._LOADERS[name] = lambda _store: []
    try:
        yield
    finally:
        curated_assets._LOADERS.clear()
        curated_assets._LOADERS.update(saved)


def materialize_all(tmp: Path):
    """Every source, helper and curation asset and the five mixtures, one Dagster run per
    partition as a backfill runs them. Returns (resources, {mixture: its materialization metadata})."""
    from dagster import DagsterInstance, materialize

    from surrogate_dagster.canary import CANARY_KEY, make_canaries
    from surrogate_dagster.curation.assets import (CURATION_ASSETS, benchmark_ngram_index, curated_rows,
                                                   dedup_decisions, filtered_rows, minhash_signatures,
                                                   sanitized_rows)
    from surrogate_dagster.sources.assets import CATALOG, helper_rows, normalized_rows, source_rows
    from surrogate_dagster.storage import LocalObjectStore
    from surrogate_dagster.synth.curated_assets import CURATED_SYNTH_ASSETS

    resources = _resources(tmp)
    LocalObjectStore(tmp / "store").put_bytes(
        CANARY_KEY, make_canaries(CANARIES["per_kind"], CANARIES["rate"], salt=CANARIES["salt"]).to_json())
    defs = [source_rows, helper_rows, normalized_rows, *CURATION_ASSETS, *CURATED_SYNTH_ASSETS]
    mixtures = [a for a in CURATION_ASSETS if a.key.to_user_string().endswith("_mixture")]
    instance = DagsterInstance.ephemeral()

    def run(assets, partition=None):
        result = materialize(defs, selection=[a.key for a in assets], partition_key=partition,
                             resources=resources, instance=instance)
        assert result.success, (assets, partition)
        return result

    for h in CATALOG.helpers:
        run([helper_rows], h.name)
    for s in CATALOG.names:
        run([source_rows, normalized_rows, sanitized_rows, filtered_rows, minhash_signatures], s)
    run([dedup_decisions, benchmark_ngram_index])
    for s in CATALOG.names:
        run([curated_rows], s)
    with _empty_synth_sets():
        run(CURATED_SYNTH_ASSETS)
    result = run(mixtures)
    meta = {}
    for a in mixtures:
        name = a.key.to_user_string()
        m = {k: v.value for k, v in result.asset_materializations_for_node(name)[0].metadata.items()}
        meta[name.removesuffix("_mixture")] = {"capped": m["capped"], "dropped_unreadable": m["dropped_unreadable"]}
    return resources, meta


# -- reading back ----------------------------------------------------------------------------------

def _parquet_rows(store, key: str | None) -> list[dict]:
    from surrogate_dagster.storage.parquet_io import parquet_bytes_to_rows

    return parquet_bytes_to_rows(store.get_bytes(key)) if key and store.exists(key) else []


def _source_rows(store, source: str) -> dict:
    from surrogate_dagster.sources.normalize import iter_raw_rows

    latest = json.loads(store.get_bytes(raw_pointer(source)))
    marker = json.loads(store.get_bytes(latest["prefix"] + "_SUCCESS.json"))
    revision, rows = iter_raw_rows(store, source)
    rows = list(rows)
    quarantine = _parquet_rows(store, latest["prefix"] + "quarantine.parquet")
    return {"revision": revision, "rows": len(rows), "sha256": digest(rows),
            "marker": {k: v for k, v in marker.items() if k not in ("seconds", "reused")},
            "quarantine": counts(q.get("reason") for q in quarantine), "quarantine_sha256": digest(quarantine)}


def _normalized_rows(store, source: str) -> dict:
    from surrogate_dagster.sources.normalize import read_normalized

    latest = json.loads(store.get_bytes(normalized_pointer(source)))
    revision, rows = read_normalized(store, source)
    quarantine = _parquet_rows(store, latest.get("quarantine_key"))
    return {"revision": revision, **rows_record(rows), "rows_in": latest["rows_in"],
            "duplicate_ids": latest["duplicate_ids"],
            "quarantine": counts(q.get("reason") for q in quarantine), "quarantine_sha256": digest(quarantine)}


def _step(store, step: str, source: str) -> dict:
    from surrogate_dagster.curation.stage_io import read_step

    latest, rows = read_step(store, step, source)
    out = {"version": latest["version"], **rows_record(rows)}
    summary = dict(latest.get("summary") or {})
    if step == "sanitized":
        audit = summary.get("canary_audit")
        summary["canary_audit"] = audit and {**audit, "hits": digest(audit["hits"])}
    out["summary"] = summary
    if step != "sanitized":
        dropped = _parquet_rows(store, latest.get("dropped_key"))
        out["dropped"] = {d["id"]: d["reason"] for d in dropped}
        out["dropped_sha256"] = digest(dropped)
    return out


def _dedup(store) -> dict:
    ptr = json.loads(store.get_bytes(pointer(DEDUP)))
    decisions = json.loads(store.get_bytes(ptr["key"]))
    return {"version": ptr["version"], "decisions": len(decisions), "sha256": digest(decisions),
            "by_reason": counts(v["reason"] for v in decisions.values()),
            "by_source": counts(k.split("\t")[0] for k in decisions),
            "cross_source": sum(1 for k, v in decisions.items() if k.split("\t")[0] != v["kept"][0])}


def _benchmark_index(store) -> dict:
    ptr = json.loads(store.get_bytes(pointer(BENCHMARK_INDEX)))
    data = store.get_bytes(ptr["key"])
    return {"version": ptr["version"], "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _mixture(store, name: str, meta: dict) -> dict:
    ptr = json.loads(store.get_bytes(mixture_pointer(name)))
    data = store.get_bytes(ptr["key"])
    card = store.get_bytes(ptr["key"].rsplit("/", 1)[0] + "/README.md")
    rows = [json.loads(line) for line in data.decode().splitlines()]
    return {"data_version": ptr["data_version"], "rows": ptr["rows"], "by_source": ptr["by_source"],
            "train_sha256": hashlib.sha256(data).hexdigest(), "card_sha256": hashlib.sha256(card).hexdigest(),
            "row_digests": {f"{r['source']}/{r['id']}": digest(r)[:12] for r in rows}, **meta}


def _stage_specs(store) -> dict:
    """Each stage's trainer run spec per profile, resolved from the store; stand-in pointers for
    the tiny base model and the stage checkpoints (the store path and repository root masked)."""
    from surrogate_dagster.catalog import load_profile
    from surrogate_dagster.paths import REPO_ROOT
    from surrogate_dagster.training.config import load_training_catalog, training_profile
    from surrogate_dagster.training.executor import TrainerExecutorResource
    from surrogate_dagster.training.refs import resolve_stage
    from surrogate_dagster.training.render import render_stage
    from surrogate_dagster.training.stage_run import run_spec

    catalog = load_training_catalog()
    store.put_bytes(pointer(BASE_MODEL), json.dumps(
        {"prefix": f"{BASE_MODEL}/standin/model", "data_version": "standin-base"}).encode())
    for s in catalog.stages:
        store.put_bytes(stage_pointer(s.name), json.dumps(
            {"output_prefix": f"training/{s.name}/standin", "data_version": f"standin-{s.name}",
             "merged": s.merge}).encode())
    out = {}
    for name in PROFILES:
        profile = load_profile(name)
        section = training_profile(profile)
        trainer = TrainerExecutorResource.from_profile(section)
        specs = {}
        for stage in catalog.stages:
            rendered = render_stage(stage, catalog, section.executor,
                                    resolve_stage(store, catalog, stage, section.base_model))
            spec = run_spec(stage, catalog, rendered, trainer, {"kind": "local", "root": "<store>"},
                            offline=profile.hub.mode == "offline")
            spec["work_dir"] = spec["work_dir"].replace(str(REPO_ROOT), "<repo>")
            specs[stage.name] = {**spec, "refs": rendered.refs, "config_hash": rendered.config_hash,
                                 "upstream_assets": rendered.upstream_assets}
        out[name] = {"executor": section.executor, "base_model": section.base_model, "stages": specs}
    for s in catalog.stages:
        store.delete(stage_pointer(s.name))
    store.delete(pointer(BASE_MODEL))
    return out


def _store_keys(store) -> list[str]:
    keys = []
    for key in store.list(""):
        for pattern, repl in VOLATILE_KEYS:
            key = pattern.sub(repl, key)
        keys.append(key)
    return sorted(set(keys))


def compute_outputs(tmp: Path) -> dict:
    """Materialize everything under ``tmp`` and read back the outputs in the baseline's shape."""
    from surrogate_dagster.curation.assets import CURATION
    from surrogate_dagster.sources.assets import CATALOG
    from surrogate_dagster.storage import LocalObjectStore

    resources, mixture_meta = materialize_all(tmp)
    store = LocalObjectStore(tmp / "store")
    keys = _store_keys(store)  # before _stage_specs adds (and removes) its stand-in pointers
    cur = resources["curation"]
    sources = {}
    for s in CATALOG.names:
        sources[s] = {"source_rows": _source_rows(store, s), "normalized_rows": _normalized_rows(store, s),
                      **{f"{step}_rows": _step(store, step, s) for step in STEPS}}
    return {
        "settings": {"ner_model": cur.ner_model, "edu_scorer": cur.edu_scorer, "edu_threshold": cur.edu_threshold,
                     "livecodebench_source": cur.livecodebench_source, "canaries": CANARIES,
                     "synth_sets": "empty"},
        "helpers": {h.name: _source_rows(store, h.name) for h in CATALOG.helpers},
        "sources": sources,
        "dedup_decisions": _dedup(store),
        "benchmark_ngram_index": _benchmark_index(store),
        "curated_synth": {n: {k: v for k, v in _step(store, "curated_synth", n).items() if k != "row_digests"}
                          for n in ("orchestrator_traces", "exec_graded_pairs")},
        "mixtures": {n: _mixture(store, n, mixture_meta[n]) for n in CURATION.mixtures},
        "store_keys": keys,
        "stage_specs": _stage_specs(store),
    }


# -- comparing -------------------------------------------------------------------------------------

def differences(want, got, path: str = "") -> list[str]:
    """One line per differing leaf: ``path: recorded -> now``."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in got:
                out.append(f"{p}: only in the baseline ({_short(want[k])})")
            elif k not in want:
                out.append(f"{p}: only now ({_short(got[k])})")
            else:
                out += differences(want[k], got[k], p)
        return out
    if isinstance(want, list) and isinstance(got, list) and all(isinstance(x, str) for x in want + got):
        gone, new = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        return ([f"{path}: only in the baseline: {x}" for x in gone] + [f"{path}: only now: {x}" for x in new]
                + ([f"{path}: same items, another order"] if not gone and not new and want != got else []))
    return [] if want == got else [f"{path}: {_short(want)} -> {_short(got)}"]


def _short(value, n: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= n else text[:n] + "..."


def _assert_same(section: str, want, got) -> None:
    diffs = differences(want, got, section)
    assert not diffs, f"{len(diffs)} differences in {section}:\n" + "\n".join(diffs[:300])


# -- tests ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return compute_outputs(tmp_path_factory.mktemp("outputs"))


@pytest.fixture(scope="module")
def baseline():
    return json.loads(BASELINE.read_text())


def test_settings_are_the_recorded_ones(outputs, baseline):
    _assert_same("settings", baseline["settings"], outputs["settings"])


@pytest.mark.parametrize("step", ["source_rows", "normalized_rows", "sanitized_rows", "filtered_rows",
                                  "curated_rows"])
def test_per_source_step_outputs(outputs, baseline, step):
    assert set(outputs["sources"]) == set(baseline["sources"])
    _assert_same(step, {s: v[step] for s, v in baseline["sources"].items()},
                 {s: v[step] for s, v in outputs["sources"].items()})


def test_helper_mirrors(outputs, baseline):
    _assert_same("helpers", baseline["helpers"], outputs["helpers"])


@pytest.mark.parametrize("section", ["dedup_decisions", "benchmark_ngram_index", "curated_synth"])
def test_cross_source_outputs(outputs, baseline, section):
    _assert_same(section, baseline[section], outputs[section])


def test_mixtures(outputs, baseline):
    _assert_same("mixtures", baseline["mixtures"], outputs["mixtures"])


@pytest.mark.parametrize("profile", PROFILES)
def test_rendered_stage_configs(outputs, baseline, profile):
    _assert_same(f"stage_specs.{profile}", baseline["stage_specs"][profile], outputs["stage_specs"][profile])


def test_store_keys(outputs, baseline):
    _assert_same("store_keys", baseline["store_keys"], outputs["store_keys"])


def test_baseline_exercises_the_steps(baseline):
    """The fixtures make every step do something: quarantines, findings, drops of each kind."""
    src = baseline["sources"].values()
    assert any(v["normalized_rows"]["quarantine"] for v in src)
    assert sum(v["sanitized_rows"]["summary"]["canaries_planted"] for v in src) > 0
    assert all(v["sanitized_rows"]["summary"]["canary_audit"]["survived"] == 0 for v in src)
    filtered = {r for v in src for r in v["filtered_rows"]["dropped"].values()}
    curated = {r for v in src for r in v["curated_rows"]["dropped"].values()}
    assert "quality_edu_score" in filtered and len(filtered) >= 2
    assert {"exact_duplicate", "near_duplicate"} <= curated and any(r.startswith("decontam_") for r in curated)
    assert all(m["rows"] > 0 for m in baseline["mixtures"].values())


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/integration/test_outputs_unchanged.py --record")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("SURROGATE_RETRY_DELAY_SCALE", "0")
    import subprocess

    import surrogate_dagster
    from surrogate_dagster.paths import REPO_ROOT

    print(f"recording with {surrogate_dagster.__file__}", file=sys.stderr)
    commit = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="outputs-baseline-") as tmp:
        recorded = compute_outputs(Path(tmp))
    BASELINE.write_text(json.dumps({"recorded_from": commit, **recorded}, indent=1, sort_keys=True,
                                   ensure_ascii=False) + "\n")
    print(f"wrote {BASELINE} ({BASELINE.stat().st_size} bytes)", file=sys.stderr)
