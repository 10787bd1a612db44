"""The planner re-plans outputs that are gone (the readers' checks of what markers and pointers promise:
tests/unit/storage/test_step_outputs.py)."""

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
from surrogate_dagster.storage.markers import iter_marker_rows
from surrogate_dagster.storage.parquet_io import rows_to_parquet_bytes
from tests.support.ops_support import hub_copy, make_resources

SOURCE = "xlam_function_calling"


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
