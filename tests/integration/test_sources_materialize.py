"""`materialize()` of the sources group for every partition on a temp-dir local profile."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance, materialize

from surrogate_dagster.paths import FIXTURES_DIR
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.sources.assets import CATALOG, helper_rows, normalized_rows, source_rows
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.parquet_io import parquet_bytes_to_rows

ASSETS = [source_rows, helper_rows, normalized_rows]


@pytest.fixture(scope="module")
def materialized(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sources")
    resources = {
        "object_store": ObjectStoreResource(kind="local", root=str(tmp / "store")),
        "hub": HubResource(mode="offline", mirror_dir=str(FIXTURES_DIR / "hub"),
                           push_dir=str(tmp / "pushes"), org="test"),
    }
    instance = DagsterInstance.ephemeral()
    results = {}
    for h in CATALOG.helpers:
        r = materialize(ASSETS, selection=[helper_rows.key], partition_key=h.name,
                        resources=resources, instance=instance)
        results[("helper_rows", h.name)] = r
    for name in CATALOG.names:
        for a in (source_rows, normalized_rows):
            r = materialize(ASSETS, selection=[a.key], partition_key=name, resources=resources,
                            instance=instance)
            results[(a.key.to_user_string(), name)] = r
    return tmp, instance, results


def _meta(result, key: str):
    mats = result.asset_materializations_for_node(key)
    return {k: v.value for k, v in mats[0].metadata.items()}


def test_every_partition_succeeds_with_counts(materialized):
    _, _, results = materialized
    assert all(r.success for r in results.values())
    for name in CATALOG.names:
        m = _meta(results[("source_rows", name)], "source_rows")
        assert m["rows"] > 0, name
        assert m["revision"] and len(m["revision"]) == 40
        n = _meta(results[("normalized_rows", name)], "normalized_rows")
        assert n["rows_out"] > 0, name
        assert n["rows_in"] == m["rows"]
        assert n["rows_out"] + n["quarantined"] == n["rows_in"], name


def test_every_source_has_a_quarantine_case(materialized):
    """Each fixture plants bad rows: the quarantine table holds them with a reason."""
    tmp, _, results = materialized
    store = LocalObjectStore(tmp / "store")
    for name in CATALOG.names:
        n = _meta(results[("normalized_rows", name)], "normalized_rows")
        assert n["quarantined"] > 0, f"{name}: fixture has no quarantined row"
        q = parquet_bytes_to_rows(store.get_bytes(n["quarantine_table"]))
        assert all(r["reason"] and r["row_json"] for r in q)


def test_normalized_rows_have_the_contract_shape(materialized):
    tmp, _, _ = materialized
    store = LocalObjectStore(tmp / "store")
    for name in CATALOG.names:
        latest = json.loads(store.get_bytes(f"normalized/{name}/_latest.json"))
        for row in parquet_bytes_to_rows(store.get_bytes(latest["key"])):
            assert row["source"] == name and row["kind"] in ("sft", "dpo")
            if row["kind"] == "sft":
                assert row["messages"] and {m["role"] for m in row["messages"]} <= {
                    "system", "user", "assistant", "tool"}
            else:
                assert row["prompt"] and row["chosen"] and row["rejected"]


def test_runbook_filters_applied_at_mirror(materialized):
    _, _, results = materialized
    oci = _meta(results[("source_rows", "opencodeinstruct")], "source_rows")
    assert "average_test_score" in oci["filtered"]
    assert "filter_uncoercible_average_test_score" in oci["quarantined_by_reason"]
    assert "resolved" in _meta(results[("source_rows", "swe_gym_openhands")], "source_rows")["filtered"]


def test_rematerializing_same_revision_rewrites_nothing(materialized):
    tmp, instance, _ = materialized
    store_dir = tmp / "store"
    before = {p: p.stat().st_mtime_ns for p in (store_dir / "raw").rglob("*") if p.is_file()}
    resources = {
        "object_store": ObjectStoreResource(kind="local", root=str(store_dir)),
        "hub": HubResource(mode="offline", mirror_dir=str(FIXTURES_DIR / "hub"),
                           push_dir=str(tmp / "pushes"), org="test"),
    }
    r = materialize(ASSETS, selection=[source_rows.key], partition_key="xlam_function_calling",
                    resources=resources, instance=instance)
    assert _meta(r, "source_rows")["reused_existing_mirror"] is True
    after = {p: p.stat().st_mtime_ns for p in (store_dir / "raw").rglob("*") if p.is_file()}
    assert after == before
