"""Upstream HF revisions: observed per source, compared with what was last mirrored.

`hf_revisions` is an observable source asset partitioned like `source_rows`. A partition's data
version is its catalog entry: the pin and the fingerprint of the rest of the entry (cap, filters,
sampling, adapter: `catalog.code_version.partition_config_version`), `<pin>:<fingerprint>`.
Dagster's own staleness compares that data version with the one each `source_rows` partition
read, so moving one pin or editing one entry's cap makes exactly that source's partitions stale
(or unsynced) in the UI, the automation conditions and `make run` alike; were the fingerprint
only the assets' code version, which is one per asset, every partition would go stale at once.

Observing also asks the hub where the upstream branch is now and records it next to the pin
(metadata `pinned`, `upstream_head`, `behind`), and every observation carries `sources`, one
table of all sources (pinned, upstream head, behind), so the asset page shows the whole picture.
`source_rows` records the revision it mirrored in its metadata; a partition whose observed pin
differs is due for re-curation.

Observing costs one revision lookup per source (offline: the repo's revision.txt; online: one
`dataset_info` call asking for the sha only). `record_revision_observations` writes the same
observations the asset does straight to the instance, without a run, for the CLI;
`catalog_sync_sensor` records them for the entries whose data version is not the one observed
last, so a pin move or an edited entry shows as stale once the code location (re)loads, without
anyone clicking Observe.
"""


import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from dagster import (
    AssetKey,
    AssetObservation,
    AssetRecordsFilter,
    BetaWarning,
    DagsterInstance,
    DataVersionsByPartition,
    DefaultSensorStatus,
    MetadataValue,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    observable_source_asset,
    sensor,
)

from ..catalog.code_version import partition_config_version
from ..catalog.models import SourceSpec
from ..hub import HubClient
from ..resources import HubResource
from ..scrub import scrub_text
from .assets import CATALOG, HF_REVISIONS, source_partitions, source_rows

SOURCE_ROWS = source_rows.key
# The tag under which an observation carries its data version (what Dagster's own
# DataVersionsByPartition observations set, and what staleness and `observed_revisions` read).
DATA_VERSION_TAG = "dagster/data_version"
UPSTREAM_REF = "main"
SOURCES_TABLE_KEY = "sources"


def entry_data_version(spec: SourceSpec) -> str:
    """A source's data version: its pin, then the fingerprint of the rest of its catalog entry."""
    return f"{spec.revision}:{partition_config_version(spec)}"


def revision_of(data_version: str) -> str:
    """The pin inside a data version (an observation recorded before the fingerprint was added
    is the pin alone)."""
    return data_version.split(":", 1)[0]


def current_revisions(hub: HubClient, specs: Iterable[SourceSpec]) -> dict[str, str]:
    """The commit sha each source's revision resolves to on the hub now (a pin resolves to itself)."""
    return {s.name: hub.current_revision(s.hf_id, s.revision) for s in specs}


def pin_status(hub: HubClient, spec: SourceSpec, upstream_ref: str = UPSTREAM_REF) -> dict[str, object]:
    """The pin of one entry next to the head of its upstream branch.

    `behind` is true when the branch has moved past the pin (or the pin is not on the branch):
    the partition keeps mirroring the pin until someone moves it.
    """
    head = hub.current_revision(spec.hf_id, upstream_ref)
    return {"hf_id": spec.hf_id, "pinned": spec.revision, "upstream_ref": upstream_ref,
            "upstream_head": head, "behind": head != spec.revision}


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
        dv = (rec.event_log_entry.asset_observation.tags or {}).get(DATA_VERSION_TAG)
        if dv:
            out[p] = (revision_of(dv), rec.storage_id)
    return out


def observed_data_versions(instance: DagsterInstance, partitions: Iterable[str] | None = None,
                           key: AssetKey = HF_REVISIONS) -> dict[str, str]:
    """The latest observed data version per partition (pin and entry fingerprint)."""
    out = {}
    for p, rec in _latest_per_partition(instance, key, partitions or CATALOG.names, observed=True).items():
        dv = (rec.event_log_entry.asset_observation.tags or {}).get(DATA_VERSION_TAG)
        if dv:
            out[p] = dv
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


def status_or_failure(hub: HubClient, spec: SourceSpec) -> dict[str, object]:
    """:func:`pin_status`, or the pin with the lookup's error where the hub cannot answer (the
    data version comes from the catalog alone, so staleness never waits for the hub)."""
    try:
        return pin_status(hub, spec)
    except Exception as e:  # noqa: BLE001 - one unreachable repo must not hide its pin
        return {"hf_id": spec.hf_id, "pinned": spec.revision, "upstream_ref": UPSTREAM_REF,
                "upstream_head": f"lookup failed: {type(e).__name__}", "behind": False}


def sources_table(statuses: dict[str, dict[str, object]]) -> str:
    """One Markdown table of every source's pin beside its upstream head, sources by name."""
    lines = ["| source | pinned | upstream head | behind |", "|---|---|---|---|"]
    for name in sorted(statuses):
        st = statuses[name]
        head = str(st.get("upstream_head", "-"))
        lines.append(f"| {name} | {str(st.get('pinned', '-'))[:12]} | {head if ' ' in head else head[:12]} | "
                     f"{'yes' if st.get('behind') else 'no'} |")
    return "\n".join(lines)


def revision_observation(hub: HubClient, spec: SourceSpec, status: dict[str, object] | None = None,
                         table: str | None = None) -> AssetObservation:
    """One source's observation: its entry as the partition's data version, pin/head as metadata,
    and (when given) the table of all sources."""
    meta: dict[str, object] = dict(status if status is not None else pin_status(hub, spec))
    if table is not None:
        meta[SOURCES_TABLE_KEY] = MetadataValue.md(table)
    return AssetObservation(asset_key=HF_REVISIONS, partition=spec.name,
                            tags={DATA_VERSION_TAG: entry_data_version(spec)}, metadata=meta)


def observe_all(hub: HubClient, specs: Iterable[SourceSpec],
                known: dict[str, dict[str, object]] | None = None) -> tuple[list[AssetObservation], dict[str, str]]:
    """Observations of `specs`, each carrying the table of all sources (`known`: the statuses of
    sources not observed now), and the sources whose hub lookup failed, with the error."""
    specs = list(specs)
    statuses = dict(known or {})
    failed = {}
    for spec in specs:
        try:
            statuses[spec.name] = pin_status(hub, spec)
        except Exception as e:  # noqa: BLE001 - one unreachable repo must not hide the others
            failed[spec.name] = scrub_text(f"{type(e).__name__}: {e}")
    table = sources_table(statuses)
    return [revision_observation(hub, s, statuses[s.name], table) for s in specs if s.name in statuses], failed


def latest_statuses(instance: DagsterInstance, partitions: Iterable[str]) -> dict[str, dict[str, object]]:
    """The pin/head metadata of each partition's latest observation (for the table of all sources)."""
    out = {}
    for p, rec in _latest_per_partition(instance, HF_REVISIONS, partitions, observed=True).items():
        meta = rec.event_log_entry.asset_observation.metadata or {}
        out[p] = {k: getattr(v, "value", v) for k, v in meta.items() if k != SOURCES_TABLE_KEY}
    return out


@dataclass
class ObservationReport:
    """What :func:`record_revision_observations` did: sources observed, failures with reasons, seconds."""

    observed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def record_revision_observations(instance: DagsterInstance, hub: HubClient,
                                 specs: Iterable[SourceSpec] | None = None) -> ObservationReport:
    """Observe every source and record each observation on the instance as a runless event.

    The events are the ones `hf_revisions` logs, so staleness and :func:`observed_revisions` read
    them alike; a source whose lookup fails is reported and the others are still recorded.
    """
    t0 = time.monotonic()
    report = ObservationReport()
    specs = list(CATALOG.sources if specs is None else specs)
    others = [n for n in CATALOG.names if n not in {s.name for s in specs}]
    observations, report.failed = observe_all(hub, specs, latest_statuses(instance, others) if others else None)
    for obs in observations:
        instance.report_runless_asset_event(obs)
        report.observed.append(obs.partition)
    report.seconds = time.monotonic() - t0
    return report


def out_of_sync(instance: DagsterInstance, specs: Iterable[SourceSpec] | None = None) -> list[SourceSpec]:
    """Entries whose data version (pin and fingerprint) is not the one observed last, or never observed."""
    specs = list(CATALOG.sources if specs is None else specs)
    observed = observed_data_versions(instance, [s.name for s in specs])
    return [s for s in specs if observed.get(s.name) != entry_data_version(s)]


# observable_source_asset is beta in the pinned Dagster: the warning says nothing to a user of
# this code location (and would print on every command that imports it).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", BetaWarning)

    @observable_source_asset(key=HF_REVISIONS, partitions_def=source_partitions, group_name="sources",
                             description="Each source's catalog entry (pin and fingerprint: the partition's data "
                                         "version) next to the upstream head the HF Hub reports; `sources` is the "
                                         "table of all (observed weekly, on demand, and when an entry changes).")
    def hf_revisions(context, hub: HubResource) -> DataVersionsByPartition:
        client = hub.get_client()
        # One observation per partition carrying both the data version and the pin/head metadata:
        # DataVersionsByPartition alone cannot carry metadata, so it is returned empty.
        observations, failed = observe_all(client, CATALOG.sources)
        for obs in observations:
            context.log_event(obs)
            if obs.metadata["behind"].value:
                context.log.info(f"{obs.partition}: pinned {str(obs.metadata['pinned'].value)[:12]}, upstream "
                                 f"{UPSTREAM_REF} is at {str(obs.metadata['upstream_head'].value)[:12]}")
        if failed:
            raise RuntimeError("hub lookup failed for " + "; ".join(f"{k}: {v}" for k, v in sorted(failed.items())))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BetaWarning)
            return DataVersionsByPartition({})


CATALOG_SYNC_INTERVAL_S = 30


@sensor(name="catalog_sync_sensor", minimum_interval_seconds=CATALOG_SYNC_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Records an hf_revisions observation for every catalog entry whose pin or fields "
                    "changed since it was observed, so exactly those sources show stale (no run)")
def catalog_sync_sensor(context: SensorEvaluationContext, hub: HubResource):
    todo = out_of_sync(context.instance)
    if not todo:
        return SkipReason("every catalog entry is observed at its current pin and fields")
    others = [n for n in CATALOG.names if n not in {s.name for s in todo}]
    client = hub.get_client()
    statuses = latest_statuses(context.instance, others)
    statuses.update({s.name: status_or_failure(client, s) for s in todo})
    table = sources_table(statuses)
    context.log.info(f"catalog entries changed since observed: {', '.join(s.name for s in todo)}")
    return SensorResult(asset_events=[revision_observation(client, s, statuses[s.name], table) for s in todo])
