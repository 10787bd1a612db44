"""Revision observations recorded without a run: the same events as the hf_revisions asset, one
revision lookup per source (no fixture rows read), each carrying the table of all sources; a moved
pin or an edited catalog entry makes exactly its partition stale, and `catalog_sync_sensor` records
the observation of exactly the entries that changed, without a run."""

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, Definitions, materialize

from surrogate_dagster.hub.client import OfflineHub
from surrogate_dagster.operations import OPS_JOBS
from surrogate_dagster.runtime.planning import stale_plan
from dagster import SensorResult, SkipReason, build_sensor_context

from surrogate_dagster.sources.revisions import (
    catalog_sync_sensor,
    entry_data_version,
    hf_revisions,
    observed_revisions,
    record_revision_observations,
)
from surrogate_dagster.sources.assets import CATALOG, source_rows
from tests.support.ops_support import hub_copy, make_resources, move_pin, plant_change

XLAM = "xlam_function_calling"


def _latest(instance, partition):
    rec = instance.fetch_observations(AssetRecordsFilter(asset_key=AssetKey("hf_revisions"),
                                                         asset_partitions=[partition]), limit=1).records[0]
    obs = rec.event_log_entry.asset_observation
    return dict(obs.tags), {k: v.value for k, v in obs.metadata.items()}, rec.run_id


@pytest.fixture
def hub(tmp_path):
    return hub_copy(tmp_path)


def test_runless_observations_equal_the_assets(tmp_path, hub):
    resources = make_resources(tmp_path, hub)
    defs = Definitions(assets=[hf_revisions], jobs=OPS_JOBS[:1], resources=resources)
    by_job, runless = DagsterInstance.ephemeral(), DagsterInstance.ephemeral()
    assert defs.resolve_job_def("observe_hf_revisions").execute_in_process(instance=by_job).success
    rep = record_revision_observations(runless, resources["hub"].get_client())
    assert sorted(rep.observed) == sorted(CATALOG.names) and not rep.failed
    assert observed_revisions(runless).keys() == set(CATALOG.names)
    for name in CATALOG.names:
        tags_a, meta_a, _ = _latest(by_job, name)
        tags_b, meta_b, run_id = _latest(runless, name)
        spec = CATALOG.by_name(name)
        assert tags_b["dagster/data_version"] == tags_a["dagster/data_version"] == entry_data_version(spec)
        assert tags_b["dagster/data_version"].startswith(spec.revision + ":")
        assert observed_revisions(runless)[name][0] == spec.revision
        assert meta_b == meta_a
        # one table of every source (pinned, upstream head, behind) on each observation
        table = meta_b["sources"].splitlines()
        assert table[0] == "| source | pinned | upstream head | behind |" and len(table) == 2 + len(CATALOG.names)
        assert any(line.startswith(f"| {name} | {spec.revision[:12]} |") for line in table)
        assert not run_id  # no run behind it


def test_observing_reads_no_rows_and_reports_a_failing_source(tmp_path, hub, monkeypatch):
    def no_rows(*a, **k):
        raise AssertionError("observing must not read dataset files")

    monkeypatch.setattr(OfflineHub, "iter_rows", no_rows)
    monkeypatch.setattr(OfflineHub, "_revision_root", no_rows)
    (hub / "datasets" / CATALOG.by_name(XLAM).hf_id / "revision.txt").unlink()  # an unreachable repo
    client = make_resources(tmp_path, hub)["hub"].get_client()
    rep = record_revision_observations(DagsterInstance.ephemeral(), client)
    assert list(rep.failed) == [XLAM] and "FileNotFoundError" in rep.failed[XLAM]
    assert len(rep.observed) == len(CATALOG.names) - 1


def test_moved_pin_makes_exactly_its_partition_stale(tmp_path, hub):
    resources = make_resources(tmp_path, hub)
    instance = DagsterInstance.ephemeral()
    client = resources["hub"].get_client()
    record_revision_observations(instance, client)
    sources = [XLAM, "when2call_sft"]
    for s in sources:
        assert materialize([hf_revisions, source_rows], selection=[source_rows.key], partition_key=s,
                           resources=resources, instance=instance).success
    graph = Definitions(assets=[hf_revisions, source_rows], resources=resources).resolve_asset_graph()
    record_revision_observations(instance, client)
    assert not stale_plan(graph, instance, [source_rows.key])[source_rows.key] & set(sources)
    undo = move_pin(XLAM, plant_change(hub, XLAM))
    try:
        record_revision_observations(instance, client)
        assert stale_plan(graph, instance, [source_rows.key])[source_rows.key] & set(sources) == {XLAM}
    finally:
        undo()


def _edit_entry(source: str, **fields):
    """Edit one loaded catalog entry (what a one-line sources.yaml edit does); returns the undo."""
    i = next(i for i, s in enumerate(CATALOG.sources) if s.name == source)
    old = CATALOG.sources[i]
    CATALOG.sources[i] = old.model_copy(update=fields)

    def undo() -> None:
        CATALOG.sources[i] = old

    return undo


def _sync(instance, resources):
    """One tick of catalog_sync_sensor, its observations recorded as the daemon records them."""
    ctx = build_sensor_context(instance=instance, resources={"hub": resources["hub"]})
    res = catalog_sync_sensor(ctx)
    if isinstance(res, SensorResult):
        for ev in res.asset_events:
            instance.report_runless_asset_event(ev)
    return res


def test_a_cap_edit_stales_that_source_and_the_sensor_observes_only_changed_entries(tmp_path, hub):
    resources = make_resources(tmp_path, hub)
    instance = DagsterInstance.ephemeral()
    first = _sync(instance, resources)  # nothing observed yet: every entry
    assert isinstance(first, SensorResult) and {e.partition for e in first.asset_events} == set(CATALOG.names)
    assert isinstance(_sync(instance, resources), SkipReason)  # observed at their current entries
    sources = [XLAM, "when2call_sft"]
    for s in sources:
        assert materialize([hf_revisions, source_rows], selection=[source_rows.key], partition_key=s,
                           resources=resources, instance=instance).success
    graph = Definitions(assets=[hf_revisions, source_rows], resources=resources).resolve_asset_graph()
    assert not stale_plan(graph, instance, [source_rows.key])[source_rows.key] & set(sources)
    spec = CATALOG.by_name("when2call_sft")
    undo = _edit_entry("when2call_sft", cap=(spec.cap or 1000) + 1)
    try:
        res = _sync(instance, resources)
        assert [e.partition for e in res.asset_events] == ["when2call_sft"]
        assert res.asset_events[0].tags["dagster/data_version"] == entry_data_version(CATALOG.by_name("when2call_sft"))
        assert isinstance(_sync(instance, resources), SkipReason)
    finally:
        undo()
    # the observation changed that partition's data version: Dagster's input rule stales it alone
    assert stale_plan(graph, instance, [source_rows.key])[source_rows.key] & set(sources) == {"when2call_sft"}
