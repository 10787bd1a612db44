"""Re-curation: observe HF revisions, the sensor plans a backfill of the changed source only,
executing it re-runs that source's chain and the cross-source mixture, nothing else.
Also the weekly / monthly schedules and the gate-failure sensor."""

import json

import pytest
from dagster import AssetCheckResult, AssetExecutionContext, AssetKey, AssetRecordsFilter, DagsterInstance, Definitions, MaterializeResult, SensorResult, SkipReason, asset, asset_check, build_sensor_context, materialize

from surrogate_dagster.operations import OPS_JOBS
from surrogate_dagster.operations.lineage_report import report_link_metadata
from surrogate_dagster.runtime.planning import describe, execute_plan, stale_plan
from surrogate_dagster.sources.revisions import hf_revisions, mirrored_revisions, observed_revisions
from surrogate_dagster.operations.lineage_report import regression_report_job
from surrogate_dagster.operations.sensors import regression_report_sensor
from surrogate_dagster.operations.sensors import revision_backfill_sensor as recuration_sensor
from surrogate_dagster.sources.assets import helper_rows, normalized_rows, source_rows
from tests.support.ops_support import TOOL_SOURCES, hub_copy, make_resources, move_pin, plant_change, toy_downstream

XLAM = "xlam_function_calling"


def _all_materializations(instance, keys):
    out = []
    for k in keys:
        for r in instance.fetch_materializations(AssetRecordsFilter(asset_key=k), limit=1000).records:
            out.append((r.storage_id, k.to_user_string(), r.partition_key))
    return sorted(out)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recuration")
    hub = hub_copy(tmp)
    resources = make_resources(tmp, hub)
    toy_mixture, toy_checkpoint = toy_downstream()
    assets = [hf_revisions, source_rows, helper_rows, normalized_rows, toy_mixture, toy_checkpoint]
    defs = Definitions(assets=assets, sensors=[recuration_sensor], jobs=OPS_JOBS[:1], resources=resources)
    instance = DagsterInstance.ephemeral()
    assert _observe(defs, instance)  # as `make run` does: pins observed before anything is mirrored
    for s in TOOL_SOURCES:
        for a in (source_rows, normalized_rows):
            assert materialize(assets, selection=[a.key], partition_key=s, resources=resources, instance=instance).success
    for a in (toy_mixture, toy_checkpoint):
        assert materialize(assets, selection=[a.key], resources=resources, instance=instance).success
    return tmp, hub, defs, instance, resources


def _observe(defs, instance):
    """What the weekly schedule runs: the observation job of hf_revisions."""
    return defs.resolve_job_def("observe_hf_revisions").execute_in_process(instance=instance).success


def _tick(defs, instance, cursor=None):
    ctx = build_sensor_context(instance=instance, cursor=cursor, definitions=defs, sensor_name="revision_backfill_sensor")
    return recuration_sensor(ctx)


def test_changed_source_is_recurated_alone(world):
    tmp, hub, defs, instance, resources = world
    assert _observe(defs, instance)
    first = _tick(defs, instance)
    assert isinstance(first, SkipReason)  # revisions observed == revisions mirrored

    pinned = observed_revisions(instance, [XLAM])[XLAM][0]
    new_rev = plant_change(hub, XLAM)
    # Upstream moved, the pin did not: the observation reports the drift and nothing is re-curated.
    assert _observe(defs, instance)
    assert observed_revisions(instance, [XLAM])[XLAM][0] == pinned
    meta = _latest_observation_metadata(instance, XLAM)
    assert f"| {XLAM} | {pinned[:12]} | {new_rev[:12]} | yes |" in meta.pop("sources").splitlines()
    assert meta == {"hf_id": "Salesforce/xlam-function-calling-60k", "pinned": pinned, "upstream_ref": "main",
                    "upstream_head": new_rev, "behind": True}
    assert isinstance(_tick(defs, instance), SkipReason)

    undo = move_pin(XLAM, new_rev)  # the reviewed one-line edit of sources.yaml
    try:
        _recurate_moved_pin(defs, instance, new_rev)
    finally:
        undo()


def _latest_observation_metadata(instance, partition):
    rec = instance.fetch_observations(AssetRecordsFilter(asset_key=AssetKey("hf_revisions"),
                                                         asset_partitions=[partition]), limit=1).records[0]
    return {k: v.value for k, v in rec.event_log_entry.asset_observation.metadata.items()}


def _recurate_moved_pin(defs, instance, new_rev):
    assert _observe(defs, instance)
    assert observed_revisions(instance, [XLAM])[XLAM][0] == new_rev
    assert _latest_observation_metadata(instance, XLAM)["behind"] is False
    # exactly the moved partition is stale; the other mirrored sources stay fresh
    graph = defs.resolve_asset_graph()
    assert stale_plan(graph, instance, [source_rows.key])[source_rows.key] & set(TOOL_SOURCES) == {XLAM}
    res = _tick(defs, instance)
    assert isinstance(res, SensorResult) and len(res.run_requests) == 1
    req = res.run_requests[0]
    assert req.tags["surrogate/sources"] == XLAM and req.partition_key == XLAM
    # that source's chain and the cross-source step, nothing of the other sources or of training
    assert sorted(k.to_user_string() for k in req.asset_selection) == ["normalized_rows", "source_rows",
                                                                       "toy_mixture"]
    assert json.loads(res.cursor) == {XLAM: new_rev}
    # an in-flight request is not made twice
    assert isinstance(_tick(defs, instance, cursor=res.cursor), SkipReason)

    # Execute exactly that plan (what the backfill daemon runs): only it is materialized.
    keys = [source_rows.key, helper_rows.key, normalized_rows.key, AssetKey("toy_mixture"), AssetKey("toy_checkpoint")]
    before = _all_materializations(instance, keys)
    graph = defs.resolve_asset_graph()
    subset_plan = {k: {req.partition_key} if graph.get(k).partitions_def else {None} for k in req.asset_selection}
    results = execute_plan(defs, instance, subset_plan, log=lambda m: None)
    assert all(results.values()) and len(results) == 3
    new = [m[1:] for m in _all_materializations(instance, keys) if m not in before]
    assert sorted(new) == [("normalized_rows", XLAM), ("source_rows", XLAM), ("toy_mixture", None)]
    assert mirrored_revisions(instance, [XLAM])[XLAM] == new_rev
    assert isinstance(_tick(defs, instance, cursor=res.cursor), SkipReason)  # caught up
    # the checkpoint (training group) is now stale, and is left for a person or its own schedule
    stale = describe(stale_plan(graph, instance, [AssetKey("toy_checkpoint"), AssetKey("toy_mixture")]))
    assert stale == {"toy_checkpoint": "unpartitioned"}


def test_failed_gate_launches_the_lineage_report(tmp_path):
    @asset(group_name="training")
    def stage1_6_checkpoint(context: AssetExecutionContext):
        return MaterializeResult(metadata={"gpu_hours": 1.0})

    @asset(group_name="training")
    def stage2_checkpoint(context: AssetExecutionContext):
        return MaterializeResult(metadata={"gpu_hours": 1.0})

    @asset(group_name="evals", deps=[stage2_checkpoint])
    def humaneval_plus_report():
        return MaterializeResult(metadata={"pass_at_1": 0.70})

    @asset_check(asset=humaneval_plus_report, name="regression_gate")
    def gate():
        return AssetCheckResult(passed=False, metadata={"drop": 0.12})

    @asset_check(asset=humaneval_plus_report, name="target_gate_named")
    def gate2():
        return AssetCheckResult(passed=False, metadata=report_link_metadata("stage2_checkpoint", "stage1_6_checkpoint@latest"))

    assets = [stage2_checkpoint, humaneval_plus_report]
    defs = Definitions(assets=[stage1_6_checkpoint, *assets], asset_checks=[gate, gate2],
                       sensors=[regression_report_sensor], jobs=[regression_report_job])
    instance = DagsterInstance.ephemeral()

    def tick(cursor=None):
        res = regression_report_sensor(build_sensor_context(instance=instance, definitions=defs, cursor=cursor,
                                                            sensor_name="regression_report_sensor"))
        return res, {r.tags["surrogate/check"]: r.run_config["ops"]["regression_lineage_report"]["config"]
                     for r in res.run_requests}

    assert isinstance(tick()[0], SensorResult)  # nothing evaluated yet
    # First run: one stage2 materialization and no earlier model: no report, no failing run
    assert materialize([*assets, gate, gate2], instance=instance, raise_on_error=False)
    res, cfgs = tick()
    assert cfgs == {}
    # Stage 1.6 exists now: a first-run stage 2 is compared with it (and the tag says so)
    assert materialize([stage1_6_checkpoint], instance=instance).success
    assert materialize([*assets, gate, gate2], selection=[humaneval_plus_report], instance=instance,
                       raise_on_error=False)
    res, cfgs = tick(res.cursor)
    # both gates judge stage 2 against stage 1.6: one report run (the report asset is told why)
    assert list(cfgs) == ["humaneval_plus_report:regression_gate"]
    cfg = cfgs["humaneval_plus_report:regression_gate"]
    assert (cfg["checkpoint_b"], cfg["checkpoint_a"]) == ("stage2_checkpoint@latest", "stage1_6_checkpoint@latest")
    assert "one materialization" in cfg["comparison"]
    assert "one materialization" in res.run_requests[0].tags["surrogate/compared_with"]
    # A second stage 2: its own previous materialization (the named gate keeps its baseline)
    assert materialize([*assets, gate, gate2], instance=instance, raise_on_error=False)
    res, cfgs = tick(res.cursor)
    pairs = {k: (v["checkpoint_b"], v["checkpoint_a"]) for k, v in cfgs.items()}
    assert pairs == {"humaneval_plus_report:regression_gate": ("stage2_checkpoint@latest", "stage2_checkpoint@previous"),
                     "humaneval_plus_report:target_gate_named": ("stage2_checkpoint@latest",
                                                                 "stage1_6_checkpoint@latest")}
    again, _ = tick(res.cursor)
    assert again.run_requests == []  # each failed evaluation is reported once
