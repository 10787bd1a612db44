"""Declarative re-curation: the automation conditions on the sources/curation assets request
exactly the changed source's partitions after its pin moves, the cross-source step once those
have run, and nothing while every observed revision is unchanged. Evaluated with Dagster's own
`evaluate_automation_conditions` against an ephemeral instance, the requested runs executed with
`materialize` as the daemon would (which assets carry conditions:
tests/unit/operations/test_automation_conditions.py)."""

import pytest
from dagster import AssetKey, AssetMaterialization, DagsterInstance, Definitions, evaluate_automation_conditions, materialize

from surrogate_dagster.operations import OPS_JOBS
from surrogate_dagster.sources.revisions import hf_revisions
from surrogate_dagster.operations.sensors import with_recuration_condition
from surrogate_dagster.sources.assets import CATALOG, helper_partitions, helper_rows, normalized_rows, source_rows
from tests.support.ops_support import TOOL_SOURCES, hub_copy, make_resources, move_pin, plant_change, toy_downstream

XLAM = "xlam_function_calling"
MIXTURE, CHECKPOINT = AssetKey("toy_mixture"), AssetKey("toy_checkpoint")


def _observe(defs, instance):
    return defs.resolve_job_def("observe_hf_revisions").execute_in_process(instance=instance).success


def _requested(result) -> dict[str, set]:
    return {k.to_user_string(): set(result.get_requested_partitions(k))
            for k in (source_rows.key, helper_rows.key, normalized_rows.key, MIXTURE, CHECKPOINT)
            if result.get_requested_partitions(k)}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("automation")
    hub = hub_copy(tmp)
    resources = make_resources(tmp, hub)
    toy_mixture, toy_checkpoint = toy_downstream()
    assets = with_recuration_condition([hf_revisions, source_rows, helper_rows, normalized_rows, toy_mixture,
                                        toy_checkpoint])
    defs = Definitions(assets=assets, jobs=OPS_JOBS[:1], resources=resources)
    instance = DagsterInstance.ephemeral()
    assert _observe(defs, instance)
    for s in TOOL_SOURCES:
        for a in (source_rows, normalized_rows):
            assert materialize(assets, selection=[a.key], partition_key=s, resources=resources,
                               instance=instance).success
    # The other partitions stand for sources mirrored earlier: recorded as materialized, so no
    # parent of the mixture is missing (a missing parent holds every automated step back).
    for s in CATALOG.names:
        if s not in TOOL_SOURCES:
            for key in (source_rows.key, normalized_rows.key):
                instance.report_runless_asset_event(AssetMaterialization(asset_key=key, partition=s))
    for p in helper_partitions.get_partition_keys():
        instance.report_runless_asset_event(AssetMaterialization(asset_key=helper_rows.key, partition=p))
    for key in (MIXTURE, CHECKPOINT):
        assert materialize(assets, selection=[key], resources=resources, instance=instance).success
    return hub, assets, defs, instance, resources


def _run(assets, resources, instance, result):
    """Execute what an evaluation requested, one run per partition (as the daemon launches them)."""
    by_partition: dict = {}
    for key, parts in _requested(result).items():
        for part in parts:
            by_partition.setdefault(part, []).append(AssetKey(key))
    for part, keys in by_partition.items():
        assert materialize(assets, selection=keys, partition_key=part, resources=resources,
                           instance=instance).success


def test_a_moved_pin_recurates_that_source_then_the_cross_source_step(world):
    hub, assets, defs, instance, resources = world
    first = evaluate_automation_conditions(defs=defs, instance=instance)
    assert first.total_requested == 0  # nothing changed since the conditions were applied
    # a re-observation that finds every pin unchanged requests nothing
    assert _observe(defs, instance)
    again = evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert again.total_requested == 0

    new_rev = plant_change(hub, XLAM)
    undo = move_pin(XLAM, new_rev)  # the reviewed one-line edit of sources.yaml
    try:
        assert _observe(defs, instance)
        moved = evaluate_automation_conditions(defs=defs, instance=instance, cursor=again.cursor)
        # exactly that source's chain; no other source, and the mixture waits for it
        assert _requested(moved) == {"source_rows": {XLAM}, "normalized_rows": {XLAM}}
        _run(assets, resources, instance, moved)

        follow = evaluate_automation_conditions(defs=defs, instance=instance, cursor=moved.cursor)
        # the cross-source step reads the new partition; training is never automated
        assert _requested(follow) == {"toy_mixture": {None}}
        _run(assets, resources, instance, follow)

        settled = evaluate_automation_conditions(defs=defs, instance=instance, cursor=follow.cursor)
        assert settled.total_requested == 0
    finally:
        undo()
