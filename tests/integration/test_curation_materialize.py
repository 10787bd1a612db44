"""The curation group materialized on the shipped fixtures, and per-source incremental re-curation."""

from __future__ import annotations

import json
import shutil

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from surrogate_dagster.curation.assets import (
    CURATION_ASSETS,
    CURATION_CHECKS,
    benchmark_ngram_index,
    curated_rows,
    dedup_decisions,
    filtered_rows,
    minhash_signatures,
    sanitized_rows,
)
from surrogate_dagster.curation.mixtures import hub_asset_name, read_latest, record_gate
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.curation.stage_io import read_step
from surrogate_dagster.canary import CANARY_KEY, CanaryScanner, make_canaries
from surrogate_dagster.paths import FIXTURES_DIR
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.sources.assets import CATALOG, helper_rows, normalized_rows, source_rows
from surrogate_dagster.sources.normalize import read_normalized
from surrogate_dagster.storage import LocalObjectStore
from tests.support.ops_support import move_pin, plant_change

ALL = [source_rows, helper_rows, normalized_rows, *CURATION_ASSETS, *CURATION_CHECKS]
PER_SOURCE = [source_rows, normalized_rows, sanitized_rows, filtered_rows, minhash_signatures]
# agent_sft and code_dpo also take synthesized rows (synth group, tested in test_synth_assets.py).
MIXTURES = [a for a in CURATION_ASSETS if a.key.to_user_string() in
            ("code_sft_mixture", "tool_sft_mixture", "tool_dpo_mixture")]
HUB_PUSHES = [a for a in CURATION_ASSETS if a.key.to_user_string() in
              {hub_asset_name(m.key.to_user_string().removesuffix("_mixture")) for m in MIXTURES}]


def _resources(tmp, hub_dir):
    return {
        "object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(hub_dir), push_dir=str(tmp / "pushes"), org="t"),
        "curation": CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                     work_dir=str(tmp / "work")),
    }


def _run(keys, resources, instance, pk=None):
    r = materialize(ALL, selection=[a.key for a in keys], partition_key=pk, resources=resources,
                    instance=instance)
    assert r.success
    return r


def _curate_all(resources, instance, sources):
    for h in CATALOG.helpers:
        _run([helper_rows], resources, instance, h.name)
    for s in sources:
        _run(PER_SOURCE, resources, instance, s)
    _run([dedup_decisions, benchmark_ngram_index], resources, instance)
    for s in CATALOG.names:
        _run([curated_rows], resources, instance, s)
    result = _run(MIXTURES, resources, instance)
    # The token-length gate is the training group's (mixture_views, with the tokenizer); stand in
    # for its verdict so the pushes run here.
    store = resources["object_store"].get_store()
    for m in MIXTURES:
        name = m.key.to_user_string().removesuffix("_mixture")
        record_gate(store, name, read_latest(store, name)["data_version"], "token_lengths",
                    {"rows_within_sequence_len": {"passed": True, "description": "stand-in"}})
    _run(HUB_PUSHES, resources, instance)
    return result


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("curation")
    hub_dir = tmp / "hub"
    shutil.copytree(FIXTURES_DIR / "hub", hub_dir)  # the incremental test edits one source
    resources = _resources(tmp, hub_dir)
    # as eval_canaries leaves it, at a rate that picks about half the rows for a shadow copy
    LocalObjectStore(tmp / "store").put_bytes(CANARY_KEY, make_canaries(2, 0.5, salt="curation-test").to_json())
    instance = DagsterInstance.ephemeral()
    result = _curate_all(resources, instance, CATALOG.names)
    return tmp, hub_dir, resources, instance, result


def test_canaries_only_in_the_shadow_audit_never_in_training_rows(curated):
    tmp, _, _, _, result = curated
    store = LocalObjectStore(tmp / "store")
    manifest = make_canaries(2, 0.5, salt="curation-test")
    scanner = CanaryScanner(manifest)
    planted = 0
    for s in CATALOG.names:
        summary = json.loads(store.get_bytes(f"curation/sanitized/{s}/_latest.json"))["summary"]
        planted += summary["canaries_planted"]
        assert summary["canary_audit"]["survived"] == 0, (s, summary["canary_audit"]["hits"])
    assert planted >= 40  # the shadow copies were made and sanitized
    # the text before each canary on its planted line ("GITHUB_TOKEN=", "DB_PASSWORD=\"", ...)
    prefixes = {c.line.split(c.value)[0] for c in manifest.canaries}
    raw = json.dumps([read_normalized(store, s)[1] for s in CATALOG.names])
    texts = {}
    for step in ("sanitized", "filtered", "curated"):
        for s in CATALOG.names:
            texts[f"{step}/{s}"] = json.dumps(read_step(store, step, s)[1])
    for key in store.list("mixtures/"):
        if key.endswith("train.jsonl"):
            texts[key] = store.get_bytes(key).decode()
    for name in {a.key.to_user_string() for a in MIXTURES}:
        assert any(k.startswith(f"mixtures/{name.removesuffix('_mixture')}/") for k in texts), name
    for where, text in texts.items():
        assert not scanner.hits(text), where
        # nor a planted line with its canary replaced by a placeholder: no more such lines than
        # the source rows themselves hold
        for p in prefixes:
            assert text.count(json.dumps(p)[1:-1]) <= raw.count(json.dumps(p)[1:-1]), (where, p)


def test_mixtures_built_pushed_and_backed_up(curated):
    tmp, _, _, _, result = curated
    store = LocalObjectStore(tmp / "store")
    for a in MIXTURES:
        name = a.key.to_user_string()
        meta = {k: v.value for k, v in result.asset_materializations_for_node(name)[0].metadata.items()}
        assert meta["rows"] > 0, name
        latest = json.loads(store.get_bytes(f"mixtures/{name.removesuffix('_mixture')}/_latest.json"))
        rows = [json.loads(line) for line in store.get_bytes(latest["key"]).decode().splitlines()]
        assert len(rows) == meta["rows"]
        pushed = curated[3].get_latest_materialization_event(AssetKey(hub_asset_name(name.removesuffix("_mixture")))).asset_materialization
        assert pushed.metadata["hub_uri"].value.startswith("hf-offline://datasets/t/")
        assert pushed.metadata["data_version"].value == latest["data_version"]
    assert len(MIXTURES) == 3 and len(HUB_PUSHES) == 3
    card = next((tmp / "pushes" / "datasets" / "t").glob("surrogate-1-v2-train/README.md")).read_text()
    assert "## Sources" in card and "revision" in card and "config hash" in card


def test_planted_problems_are_removed(curated):
    """Fixtures plant secrets, a HumanEval prompt, BFCL's parallel_multiple_0 and duplicates."""
    tmp, *_ = curated
    store = LocalObjectStore(tmp / "store")
    all_text = []
    reasons = {}
    for s in CATALOG.names:
        latest, rows = read_step(store, "curated", s)
        all_text += [json.dumps(r) for r in rows]
        for k, v in latest["summary"]["dropped"].items():
            reasons[k] = reasons.get(k, 0) + v
    blob = "\n".join(all_text)
    # AWS's documented example access key id (AKIA...EXAMPLE) is allow-listed, as gitleaks does;
    # the secret next to it and the planted email are replaced.
    assert "wJalrXUtnFEMI" not in blob and "<SECRET_AWS_SECRET_KEY_" in blob
    # Reserved documentation domains (example.com) are left alone; real addresses are not.
    assert "@gmail.com" not in blob
    assert reasons.get("decontam_bfcl", 0) >= 1 and reasons.get("decontam_humaneval", 0) >= 1
    assert reasons.get("exact_duplicate", 0) + reasons.get("near_duplicate", 0) >= 1


def test_sanitizer_counts_in_metadata(curated):
    tmp, *_ = curated
    store = LocalObjectStore(tmp / "store")
    latest, _ = read_step(store, "sanitized", "codefeedback_filtered")
    assert latest["summary"]["counts"].get("cloud_credentials", 0) >= 1
    records = curated[3].fetch_materializations(AssetKey("sanitized_rows"), limit=100).records
    metas = [{k: v.value for k, v in r.asset_materialization.metadata.items()} for r in records]
    assert metas and sum(m["cpu_seconds_detectors"] for m in metas) > 0
    assert all(m["cpu_seconds_ner"] == 0 for m in metas if m["ner_model"] == "none")


def test_forked_workers_inside_a_dagster_step_give_the_same_outputs(curated, tmp_path):
    """workers=2 with tiny chunks: every per-source step forks a pool inside the step process
    and must write exactly what the in-process run (the module fixture, workers=1) wrote."""
    tmp, hub_dir, _, _, _ = curated
    resources = _resources(tmp_path, hub_dir)
    resources["curation"] = CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                             work_dir=str(tmp_path / "work"), workers=2, chunk_rows=3,
                                             datatrove_executor={"kind": "pool", "workers": 2, "chunk_rows": 3})
    instance = DagsterInstance.ephemeral()
    serial, forked = LocalObjectStore(tmp / "store"), LocalObjectStore(tmp_path / "store")
    forked.put_bytes(CANARY_KEY, serial.get_bytes(CANARY_KEY))
    for source in ("opc_sft_stage2", "codefeedback_filtered"):
        _run(PER_SOURCE, resources, instance, source)
        for step in ("sanitized", "filtered"):
            assert read_step(forked, step, source) == read_step(serial, step, source), (step, source)
        sig_files = sorted(p.relative_to(tmp_path / "work") for p in (tmp_path / "work" / "minhash" / source).rglob("*")
                           if p.is_file())
        assert sig_files
        for rel in sig_files:
            assert (tmp_path / "work" / rel).read_bytes() == (tmp / "work" / rel).read_bytes(), rel


def test_one_changed_source_recurates_alone(curated):
    """A new upstream revision of one source rewrites only its per-source outputs."""
    tmp, hub_dir, resources, instance, _ = curated
    work = tmp / "work" / "minhash"
    other = "opencodeinstruct"
    before_other = {p: p.stat().st_mtime_ns for p in (work / other).rglob("*") if p.is_file()}
    store = LocalObjectStore(tmp / "store")
    other_filtered = read_step(store, "filtered", other)[0]["version"]

    changed = "xlam_function_calling"
    new_rev = plant_change(hub_dir, changed)  # upstream keeps every 2nd row, under a new commit
    undo = move_pin(changed, new_rev)  # the reviewed one-line edit of sources.yaml
    try:
        _run(PER_SOURCE, resources, instance, changed)
        _run([dedup_decisions], resources, instance)
    finally:
        undo()
    assert json.loads(store.get_bytes(f"raw/{changed}/_latest.json"))["revision"] == new_rev
    # untouched: the other source's signatures and its filtered version
    assert {p: p.stat().st_mtime_ns for p in (work / other).rglob("*") if p.is_file()} == before_other
    assert read_step(store, "filtered", other)[0]["version"] == other_filtered


def _trace(row_id: str, turns: list[tuple[str, str]]) -> dict:
    return {"id": row_id, "source": "synth_orchestrator", "kind": "sft", "prompt": [], "chosen": "",
            "rejected": "", "tools": "", "meta": "{}",
            "messages": [{"role": "system", "content": "You are Surrogate-1, an orchestrator."}]
            + [{"role": r, "content": c} for r, c in turns]}


def test_synthesized_traces_are_curated_like_a_source(curated, tmp_path, monkeypatch):
    """Sanitized, deduplicated against the sources and within the set, decontaminated; only the
    survivors reach the agent mixture."""
    import gzip
    import re

    from surrogate_dagster.curation.assets import CURATION
    from surrogate_dagster.synth import curated_assets
    from surrogate_dagster.synth.curated_assets import CURATED_SYNTH_ASSETS

    tmp, hub_dir, _, _, _ = curated
    for d in ("store", "work"):
        shutil.copytree(tmp / d, tmp_path / d)
    resources = _resources(tmp_path, hub_dir)
    store = LocalObjectStore(tmp_path / "store")
    agent = next(s.name for s in CATALOG.sources if s.family == "agent")
    source_row = max(read_step(store, "filtered", agent)[1], key=lambda r: len(json.dumps(r)))
    turns = [(m["role"], m["content"]) for m in source_row["messages"] if m["role"] != "system"]
    # one identifier renamed in the longest turn: a near duplicate, not an exact one
    longest = max(range(len(turns)), key=lambda i: len(turns[i][1]))
    edited = [(r, re.sub(r"(?<![</])\b[a-z_]{6,}\b", "renamed_name", c, count=1) if i == longest else c)
              for i, (r, c) in enumerate(turns)]
    assert edited != turns
    he = json.loads(gzip.open(resources["curation"].benchmarks_path() / "HumanEval.jsonl.gz", "rt").readline())
    key = "AKIA" + "Q7RZ2KXW5MPL3VBN"
    traces = [
        _trace("t-clean", [("user", "Plan a migration of the billing cron jobs to Kubernetes CronJobs."),
                           ("assistant", "Step 1: inventory the crontab entries and their schedules.")]),
        _trace("t-secret", [("user", f"Deploy with aws_access_key_id = {key} to the staging bucket."),
                            ("assistant", "I will not reuse a key pasted in chat; rotate it first.")]),
        _trace("t-copy", turns),
        _trace("t-near", edited),
        _trace("t-bench", [("user", "Complete this function.\n" + he["prompt"]),
                           ("assistant", he["prompt"] + he["canonical_solution"])]),
        _trace("t-twin", [("user", "Plan a migration of the billing cron jobs to Kubernetes CronJobs."),
                          ("assistant", "Step 1: inventory the crontab entries and their schedules.")]),
    ]
    monkeypatch.setitem(curated_assets._LOADERS, "orchestrator_traces", lambda _store: traces)
    agent_mix = next(a for a in CURATION_ASSETS if a.key.to_user_string() == "agent_sft_mixture")
    r = materialize([*ALL, *CURATED_SYNTH_ASSETS], selection=[CURATED_SYNTH_ASSETS[0].key, agent_mix.key],
                    resources=resources, instance=DagsterInstance.ephemeral())
    assert r.success
    meta = {k: v.value for k, v in r.asset_materializations_for_node("curated_orchestrator_traces")[0].metadata.items()}
    assert meta["counts"] == {"exact_duplicate": 2, "near_duplicate": 1, "decontam_humaneval": 1}
    assert meta["rows_kept"] == 2 and meta["rows_changed_by_sanitizer"] == 1
    latest, dropped = read_step(store, "curated_synth", "orchestrator_traces")[0], None
    kept = read_step(store, "curated_synth", "orchestrator_traces")[1]
    assert [k["id"] for k in kept] == ["t-clean", "t-secret"]
    assert key not in json.dumps(kept)
    mix_key = json.loads(store.get_bytes("mixtures/agent_sft/_latest.json"))["key"]
    synth_rows = [json.loads(line) for line in store.get_bytes(mix_key).decode().splitlines()
                  if json.loads(line)["source"] == "synth_orchestrator"]
    assert [row["id"] for row in synth_rows] == ["t-clean", "t-secret"] and key not in json.dumps(synth_rows)
    assert CURATION.minhash.threshold == 0.7 and latest["summary"]["dropped"] == meta["counts"]
