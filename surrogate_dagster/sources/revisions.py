"""Upstream HF revisions: observed per source, compared with what was last mirrored.

`hf_revisions` is an observable source asset partitioned like `source_rows`. Every catalog entry
is pinned to a commit, so a partition's data version is its pin: moving one pin (a one-line edit
of assets/sources.yaml) changes exactly that partition's data version, which makes exactly that
`source_rows` partition stale. Observing also asks the hub where the upstream branch is now and
records it next to the pin (metadata `pinned`, `upstream_head`, `behind`), so drift is visible
without ever being mirrored. `source_rows` records the revision it mirrored in its metadata; a
partition whose observed pin differs is due for re-curation.

Observing costs one revision lookup per source (offline: the repo's revision.txt; online: one
`dataset_info` call asking for the sha only). `record_revision_observations` writes the same
observations the asset does straight to the instance, without a run, for the CLI.
"""


import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from dagster import (
    AssetKey,
    AssetObservation,
    AssetRecordsFilter,
    DagsterInstance,
    DataVersionsByPartition,
    observable_source_asset,
)

from ..catalog.models import SourceSpec
from ..hub import HubClient
from ..resources import HubResource
from .assets import CATALOG, HF_REVISIONS, source_partitions, source_rows

SOURCE_ROWS = source_rows.key
# The tag under which an observation carries its data version (what Dagster's own
# DataVersionsByPartition observations set, and what staleness and `observed_revisions` read).
DATA_VERSION_TAG = "dagster/data_version"
UPSTREAM_REF = "main"


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


def revision_observation(hub: HubClient, spec: SourceSpec) -> AssetObservation:
    """One source's observation: the pin as the partition's data version, pin/head as metadata."""
    return AssetObservation(asset_key=HF_REVISIONS, partition=spec.name, tags={DATA_VERSION_TAG: spec.revision},
                            metadata=pin_status(hub, spec))


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
    for spec in CATALOG.sources if specs is None else specs:
        try:
            obs = revision_observation(hub, spec)
        except Exception as e:  # noqa: BLE001 - one unreachable repo must not hide the others
            report.failed[spec.name] = f"{type(e).__name__}: {e}"
            continue
        instance.report_runless_asset_event(obs)
        report.observed.append(spec.name)
    report.seconds = time.monotonic() - t0
    return report


@observable_source_asset(key=HF_REVISIONS, partitions_def=source_partitions, group_name="sources",
                         description="Each source's pinned commit (the partition's data version) next to "
                                     "the upstream head the HF Hub reports (observed weekly and on demand).")
def hf_revisions(context, hub: HubResource) -> DataVersionsByPartition:
    client = hub.get_client()
    # One observation per partition carrying both the data version and the pin/head metadata:
    # DataVersionsByPartition alone cannot carry metadata, so it is returned empty.
    for spec in CATALOG.sources:
        obs = revision_observation(client, spec)
        context.log_event(obs)
        status = {k: v.value for k, v in obs.metadata.items()}
        if status["behind"]:
            context.log.info(f"{spec.name}: pinned {spec.revision[:12]}, upstream {UPSTREAM_REF} is at "
                             f"{str(status['upstream_head'])[:12]}")
    return DataVersionsByPartition({})
