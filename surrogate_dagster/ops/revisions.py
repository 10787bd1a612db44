"""Upstream HF revisions: observed per source, compared with what was last mirrored.

`hf_revisions` is an observable source asset partitioned like `source_rows`: observing it asks
the hub (HubClient.current_revision, resolving the catalog's pin or `main`) for every source and
records each revision as that partition's data version. `source_rows` records the revision it
mirrored in its metadata; a partition whose observed revision differs is due for re-curation.
"""


from collections.abc import Iterable

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    DataVersion,
    DataVersionsByPartition,
    observable_source_asset,
)

from ..catalog.models import SourceSpec
from ..hub import HubClient
from ..resources import HubResource
from ..sources.assets import CATALOG, source_partitions

HF_REVISIONS = AssetKey("hf_revisions")
SOURCE_ROWS = AssetKey("source_rows")


def current_revisions(hub: HubClient, specs: Iterable[SourceSpec]) -> dict[str, str]:
    """The commit sha each source's pinned revision (or `main`) resolves to on the hub now."""
    return {s.name: hub.current_revision(s.hf_id, s.revision) for s in specs}


def _latest_per_partition(instance: DagsterInstance, key: AssetKey, partitions: Iterable[str], observed: bool):
    fetch = instance.fetch_observations if observed else instance.fetch_materializations
    out = {}
    for p in partitions:
        recs = fetch(AssetRecordsFilter(asset_key=key, asset_partitions=[p]), limit=1).records
        if recs:
            out[p] = recs[0]
    return out


def mirrored_revisions(instance: DagsterInstance, partitions: Iterable[str] | None = None,
                       key: AssetKey = SOURCE_ROWS) -> dict[str, str]:
    """The revision each source partition was last mirrored at (its `revision` metadata)."""
    out = {}
    for p, rec in _latest_per_partition(instance, key, partitions or CATALOG.names, observed=False).items():
        meta = rec.event_log_entry.asset_materialization.metadata
        if "revision" in meta:
            out[p] = str(meta["revision"].value)
    return out


def observed_revisions(instance: DagsterInstance, partitions: Iterable[str] | None = None,
                       key: AssetKey = HF_REVISIONS) -> dict[str, tuple[str, int]]:
    """The latest observed revision per partition, with the observation's storage id."""
    out = {}
    for p, rec in _latest_per_partition(instance, key, partitions or CATALOG.names, observed=True).items():
        dv = (rec.event_log_entry.asset_observation.tags or {}).get("dagster/data_version")
        if dv:
            out[p] = (dv, rec.storage_id)
    return out


def changed_sources(current: dict[str, str], mirrored: dict[str, str], include_missing: bool = False) -> list[str]:
    """Sources whose current revision differs from the mirrored one (never mirrored: if asked)."""
    out = []
    for name, rev in current.items():
        if name in mirrored:
            if mirrored[name] != rev:
                out.append(name)
        elif include_missing:
            out.append(name)
    return sorted(out)


@observable_source_asset(key=HF_REVISIONS, partitions_def=source_partitions, group_name="sources",
                         description="Each source's current commit on the HF Hub; the revision is the "
                                     "partition's data version (observed weekly and on demand).")
def hf_revisions(hub: HubResource) -> DataVersionsByPartition:
    client = hub.get_client()
    return DataVersionsByPartition({name: DataVersion(rev)
                                    for name, rev in current_revisions(client, CATALOG.sources).items()})
