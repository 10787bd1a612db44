"""Readers check what markers and pointers promise; the planner re-plans outputs that are gone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import DagsterInstance, Definitions, materialize

from surrogate_dagster.curation import stage_io
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.runtime.planning import stale_plan
from surrogate_dagster.sources.assets import helper_rows, normalized_rows, source_rows
from surrogate_dagster.storage import LocalObjectStore
from surrogate_dagster.storage.markers import IncompleteData, iter_marker_rows
from surrogate_dagster.storage.parquet_io import rows_to_parquet_bytes
from tests.support.ops_support import hub_copy, make_resources

SOURCE = "xlam_function_calling"


# ---- stage_io pointer row count ---------------------------------------------------------------
def test_step_read_refuses_a_table_shorter_than_its_pointer(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    rows = [{"id": i, "text": f"row {i}"} for i in range(5)]
    key = stage_io.write_step(store, "filtered", "src", "v1", rows)
    assert stage_io.read_step(store, "filtered", "src")[1] == rows
    store.put_bytes(key, rows_to_parquet_bytes(rows[:3]))  # valid Parquet, two rows short
    with pytest.raises(IncompleteData, match="curation/filtered/src/v1/rows.parquet") as exc:
        stage_io.read_step(store, "filtered", "src")
    assert "5 rows" in str(exc.value) and "3 rows" in str(exc.value)


# ---- _SUCCESS.json markers --------------------------------------------------------------------
def _table(store: LocalObjectStore, parts: list[list[dict]]) -> str:
    keys = []
    for i, rows in enumerate(parts):
        keys.append(f"raw/s/rev/part-{i:05d}.parquet")
        store.put_bytes(keys[-1], rows_to_parquet_bytes(rows))
    marker = "raw/s/rev/_SUCCESS.json"
    store.put_bytes(marker, json.dumps({"parts": keys, "rows": sum(map(len, parts))}).encode())
    return marker


def test_marker_rows_checked_against_parts(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store", fsync=False)
    parts = [[{"i": i} for i in range(4)], [{"i": i} for i in range(4, 7)]]
    marker = _table(store, parts)
    assert [r["i"] for r in iter_marker_rows(store, marker)] == list(range(7))

    # A part dropped from the marker's list: fewer rows than the marker counts.
    doc = json.loads(store.get_bytes(marker))
    store.put_bytes(marker, json.dumps({**doc, "parts": doc["parts"][:1]}).encode())
    with pytest.raises(IncompleteData, match="_SUCCESS.json.*7 rows"):
        list(iter_marker_rows(store, marker))

    # A valid but shorter part.
    store.put_bytes(marker, json.dumps(doc).encode())
    store.put_bytes(doc["parts"][1], rows_to_parquet_bytes(parts[1][:1]))
    with pytest.raises(IncompleteData, match="raw/s/rev/_SUCCESS.json"):
        list(iter_marker_rows(store, marker))

    # A listed part that is gone.
    store.delete(doc["parts"][1])
    with pytest.raises(IncompleteData, match="1 missing"):
        list(iter_marker_rows(store, marker))


# ---- planner: a fresh-looking materialization whose object is gone ------------------------------
@pytest.fixture
def materialized(tmp_path: Path):
    res = {**make_resources(tmp_path, hub_copy(tmp_path)),
           "curation": CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                        work_dir=str(tmp_path / "work"))}
    from surrogate_dagster.curation.assets import sanitized_rows

    assets = [source_rows, helper_rows, normalized_rows, sanitized_rows]
    instance = DagsterInstance.ephemeral()
    graph = Definitions(assets=assets, resources=res).resolve_asset_graph()
    for a in (source_rows, normalized_rows, sanitized_rows):
        assert materialize(assets, selection=[a.key], partition_key=SOURCE, resources=res, instance=instance).success
    store = LocalObjectStore(tmp_path / "store")
    return graph, instance, store, [source_rows.key, normalized_rows.key, sanitized_rows.key]


def _planned(graph, instance, store, keys) -> set[str]:
    plan = stale_plan(graph, instance, keys, store=store)
    return {k.to_user_string() for k, parts in plan.items() if SOURCE in parts}


def test_planner_replans_partition_whose_output_is_gone(materialized) -> None:
    graph, instance, store, keys = materialized
    assert _planned(graph, instance, store, keys) == set()

    # normalized_rows records the object's URI: delete the object (the sidecar stays).
    normalized = store.list(f"normalized/{SOURCE}/")
    rows_key = next(k for k in normalized if k.endswith("/rows.parquet"))
    (store.root / rows_key).unlink()
    assert _planned(graph, instance, store, keys) == {"normalized_rows"}

    # sanitized_rows records no URI: its stage_io pointer names the table.
    table = json.loads(store.get_bytes(stage_io.pointer_key("sanitized", SOURCE)))["key"]
    store.delete(table)
    assert _planned(graph, instance, store, keys) == {"normalized_rows", "sanitized_rows"}

    # source_rows records its prefix: a part its _SUCCESS.json lists is gone.
    marker = next(k for k in store.list("raw/") if k.endswith("_SUCCESS.json") and f"raw/{SOURCE}/" in k)
    store.delete(json.loads(store.get_bytes(marker))["parts"][0])
    assert _planned(graph, instance, store, keys) == {"source_rows", "normalized_rows", "sanitized_rows"}


def test_normalize_refuses_a_mirror_shorter_than_its_marker(tmp_path: Path) -> None:
    """normalized_rows reads the mirror through its marker: a short part fails the step, naming
    the marker, instead of normalizing fewer rows."""
    resources = make_resources(tmp_path, hub_copy(tmp_path))
    assert materialize([source_rows], partition_key=SOURCE, resources=resources).success
    store = LocalObjectStore(tmp_path / "store")
    marker = next(k for k in store.list("raw/") if k.endswith("_SUCCESS.json") and f"raw/{SOURCE}/" in k)
    doc = json.loads(store.get_bytes(marker))
    rows = [r for p in doc["parts"] for r in iter_marker_rows(store, marker)][: doc["rows"]]
    store.put_bytes(doc["parts"][-1], rows_to_parquet_bytes(rows[:1]))  # valid Parquet, rows short
    result = materialize([source_rows, helper_rows, normalized_rows], selection=[normalized_rows.key],
                         partition_key=SOURCE, resources=resources, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "_SUCCESS.json" in failure.step_failure_data.error.to_string()


def test_a_recorded_tree_without_trailing_slash_is_present_while_it_has_objects(tmp_path: Path) -> None:
    """Checkpoints record their adapter/ and merged/ trees as URIs without a trailing '/'."""
    from surrogate_dagster.storage.markers import missing_outputs

    store = LocalObjectStore(tmp_path / "store", fsync=False)
    store.put_bytes("training/stage1/abc/merged/config.json", b"{}")
    assert missing_outputs(store, ["training/stage1/abc/merged"]) == []
    assert missing_outputs(store, ["training/stage1/abc/adapter"]) == ["training/stage1/abc/adapter"]
    store.delete("training/stage1/abc/merged/config.json")
    assert missing_outputs(store, ["training/stage1/abc/merged"]) == ["training/stage1/abc/merged"]
