"""Standard table metadata: every asset that writes rows records `dagster/row_count` and
`dagster/column_schema` on its materialization, from the writer of its main table (stage_io,
normalize, synth table sets, mixtures) rather than from each asset."""

import pytest
from dagster import AssetExecutionContext, DagsterInstance, MaterializeResult, asset, materialize

from surrogate_dagster.curation.assets import filtered_rows, sanitized_rows
from surrogate_dagster.curation.resource import CurationSettings
from surrogate_dagster.curation.stage_io import read_step
from surrogate_dagster.resources import ObjectStoreResource
from surrogate_dagster.sources.assets import CATALOG, helper_rows, normalized_rows, source_rows
from surrogate_dagster.sources.normalize import read_normalized
from surrogate_dagster.synth.config import write_table_set
from tests.support.ops_support import hub_copy, make_resources

SOURCE = "hermes_function_calling"


def _schema(mat):
    return [c.name for c in mat.metadata["dagster/column_schema"].value.columns]


def _columns(rows):
    return list(dict.fromkeys(k for r in rows for k in r))


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("table_meta")
    resources = {**make_resources(tmp, hub_copy(tmp)),
                 "curation": CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                              work_dir=str(tmp / "work"))}
    assets = [source_rows, helper_rows, normalized_rows, sanitized_rows, filtered_rows]
    instance = DagsterInstance.ephemeral()
    for h in CATALOG.helpers:
        assert materialize(assets, selection=[helper_rows.key], partition_key=h.name, resources=resources,
                           instance=instance).success
    res = materialize(assets, selection=[a.key for a in assets if a is not helper_rows], partition_key=SOURCE,
                      resources=resources, instance=instance)
    assert res.success
    return res, resources["object_store"].get_store()


def test_normalized_rows_record_row_count_and_columns(chain):
    res, store = chain
    mat = res.asset_materializations_for_node("normalized_rows")[0]
    _, rows = read_normalized(store, SOURCE)
    assert rows and mat.metadata["dagster/row_count"].value == len(rows)
    assert _schema(mat) == _columns(rows)


@pytest.mark.parametrize("asset_name,step", [("sanitized_rows", "sanitized"), ("filtered_rows", "filtered")])
def test_curation_steps_record_row_count_and_columns(chain, asset_name, step):
    res, store = chain
    mat = res.asset_materializations_for_node(asset_name)[0]
    pointer, rows = read_step(store, step, SOURCE)
    assert mat.metadata["dagster/row_count"].value == pointer["rows"] == len(rows)
    assert _schema(mat) == _columns(rows) and "messages" in _schema(mat)


def test_a_table_set_records_its_first_table(tmp_path):
    rows = [{"id": "a", "score": 1, "tags": ["x"]}, {"id": "b", "score": 2.5, "note": None}]

    @asset
    def toy_traces(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
        write_table_set(object_store.get_store(), "synth/toy", "v1", {"rows": rows, "rejected": [{"id": "c"}] * 5}, {})
        return MaterializeResult(metadata={"kept": len(rows)})

    res = materialize([toy_traces], resources={"object_store": ObjectStoreResource(kind="local", root=str(tmp_path))})
    meta = res.asset_materializations_for_node("toy_traces")[0].metadata
    assert meta["dagster/row_count"].value == 2 and meta["kept"].value == 2  # the asset's own metadata kept
    cols = {c.name: c for c in meta["dagster/column_schema"].value.columns}
    assert list(cols) == ["id", "score", "tags", "note"]
    assert cols["score"].type == "float|int" and cols["tags"].type == "list"
    assert cols["note"].type == "null" and cols["note"].constraints.nullable
    assert not cols["id"].constraints.nullable


def test_filtered_rows_show_drop_reasons_and_edu_scores_as_plots(tmp_path):
    code_source = "rstar_coder"  # code rows: the edu scorer scores them (tool-call rows go unscored)
    resources = {**make_resources(tmp_path, hub_copy(tmp_path)),
                 "curation": CurationSettings(ner_model=None, edu_scorer="rubric", edu_threshold=2,
                                              work_dir=str(tmp_path / "work"))}
    assets = [source_rows, helper_rows, normalized_rows, sanitized_rows, filtered_rows]
    res = materialize(assets, selection=[a.key for a in assets if a is not helper_rows], partition_key=code_source,
                      resources=resources, instance=DagsterInstance.ephemeral())
    meta = res.asset_materializations_for_node("filtered_rows")[0].metadata
    edu = meta["edu_scores"].value
    # the rows the edu scorer saw, as a number the Plots tab can trend; its scores as a histogram
    assert meta["edu_rows_checked"].value == edu["rows_checked"] > 0 and edu["score_histogram"]
    assert meta["edu_score_plot"].value.startswith(f"**Edu scores, rows per half point (left of the line: dropped): {code_source}**")
    if meta["rows_dropped"].value:
        assert meta["dropped_by_reason_plot"].value.startswith("**Rows dropped by the quality filters, by reason")
    else:
        assert "dropped_by_reason_plot" not in meta
