"""The source rows asset reports the capped sampling's problems in its metadata (the sampling rules:
tests/unit/sources/test_cap_sampling.py)."""

from __future__ import annotations

from dagster import materialize

from surrogate_dagster.paths import FIXTURES_DIR
from surrogate_dagster.resources import HubResource, ObjectStoreResource
from surrogate_dagster.sources.assets import CATALOG, source_rows


def test_source_rows_metadata_reports_problems(tmp_path):
    resources = {"object_store": ObjectStoreResource(kind="local", root=str(tmp_path / "store")),
                 "hub": HubResource(mode="offline", mirror_dir=str(FIXTURES_DIR / "hub"),
                                    push_dir=str(tmp_path / "pushes"), org="test")}
    res = materialize([source_rows], partition_key="opencodereasoning_2", resources=resources)
    md = {k: v.value for k, v in res.asset_materializations_for_node("source_rows")[0].metadata.items()}
    assert md["group_by"] == "question_id"
    assert md["problems"] == 24 and md["rows_per_problem_max"] == 2 and md["rows"] == 26
    assert CATALOG.by_name("opencodereasoning_2").group_by == ["question_id"]
    res = materialize([source_rows], partition_key="xlam_function_calling", resources=resources)
    md = {k: v.value for k, v in res.asset_materializations_for_node("source_rows")[0].metadata.items()}
    assert md["group_by"].startswith("none") and md["problems"] == md["rows"] and md["rows_per_problem_max"] == 1
