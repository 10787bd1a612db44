"""Sources group: `source_rows` and `helper_rows` (mirrors) and `normalized_rows` (adapters)."""


import json

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    StaticPartitionsDefinition,
    asset,
)

from ..catalog import load_sources
from ..catalog.code_version import PARTITION_VERSION_KEY, PARTITION_VERSIONS_KEY, function_code_version, partition_config_versions
from ..catalog.loader import config_hash
from ..metadata import counts_table
from ..resources import HubResource, ObjectStoreResource
from ..retries import MIRROR_RETRY
from ..storage.layout import success_marker
from .mirror import MirrorReport, mirror_fingerprint, mirror_source
from .normalize import load_helper_questions, normalize_source

CATALOG = load_sources()  # validated at load time: a broken sources.yaml fails definitions
source_partitions = StaticPartitionsDefinition(CATALOG.names)
helper_partitions = StaticPartitionsDefinition([h.name for h in CATALOG.helpers])
# Asset-level code version: the catalog's hash without the pins. A pin reaches `source_rows` per
# partition, as the data version of its `hf_revisions` partition, so moving one pin makes exactly
# that partition stale; were the pins hashed here, every partition would go stale at once.
CATALOG_VERSION = config_hash(CATALOG.model_dump(
    mode="json", exclude={"sources": {"__all__": {"revision"}}, "helpers": {"__all__": {"revision"}}}))
# `helper_rows` has no observed upstream, so its pins are part of its code version (the four
# helpers are read together by OpenCodeReasoning-2, so one moved helper pin re-mirrors them all).
HELPERS_VERSION = config_hash({"helpers": [h.model_dump(mode="json") for h in CATALOG.helpers]})
# Per-source versions: each source's own catalog entry (pin aside); the per-source assets record
# theirs and the stale plan re-runs only the sources whose entry changed (catalog/code_version.py).
SOURCE_VERSIONS = partition_config_versions(CATALOG.sources)
PER_SOURCE_METADATA = {PARTITION_VERSIONS_KEY: MetadataValue.json(SOURCE_VERSIONS)}
# The observable source asset of the pins (revisions.py defines it on this key; it imports this module).
HF_REVISIONS = AssetKey("hf_revisions")


def _prefix_uri(store, prefix: str) -> str:
    """The URI of a key prefix (keys themselves may not end in '/')."""
    return store.uri(success_marker(prefix)).rsplit("/", 1)[0] + "/"


def _mirror_result(context: AssetExecutionContext, report: MirrorReport, uri: str) -> MaterializeResult:
    return MaterializeResult(
        data_version=DataVersion(f"{report.revision}:{report.fingerprint}"),
        metadata={
            "revision": report.revision,
            "rows": report.rows,
            "cap": report.cap if report.cap is not None else -1,
            "shortfall": report.shortfall,
            "bytes": report.bytes,
            "parts": len(report.parts),
            "filtered": MetadataValue.md(counts_table(report.filtered, "filter")),
            "quarantined": sum(report.quarantined.values()),
            "quarantined_by_reason": MetadataValue.md(counts_table(report.quarantined)),
            "schema": MetadataValue.json(report.schema),
            "uri": MetadataValue.url(uri) if uri.startswith("s3://") else uri,
            # Spread over problems (sources/sampling.py): without group_by every row is a problem.
            "group_by": ", ".join(report.group_by) or "none (each row its own problem)",
            "problems": report.groups,
            "rows_per_problem_max": report.rows_per_group_max,
            "candidate_rows": report.candidates,
            "problems_available": report.groups_available,
            "reused_existing_mirror": report.reused,
            "seconds": report.seconds,
            PARTITION_VERSION_KEY: SOURCE_VERSIONS.get(context.partition_key, "none"),
        },
    )


def _mirror_partition(context: AssetExecutionContext, object_store: ObjectStoreResource,
                      hub: HubResource) -> MaterializeResult:
    spec = CATALOG.by_name(context.partition_key)
    store = object_store.get_store()
    report = mirror_source(spec, hub.get_client(), store, log=context.log.info)
    return _mirror_result(context, report, _prefix_uri(store, report.prefix))


@asset(group_name="sources", partitions_def=source_partitions,
       code_version=function_code_version(__name__, "source_rows"), metadata=PER_SOURCE_METADATA, deps=[HF_REVISIONS], kinds={"parquet", "huggingface"}, retry_policy=MIRROR_RETRY)
def source_rows(context: AssetExecutionContext, object_store: ObjectStoreResource,
                hub: HubResource) -> MaterializeResult:
    """Upstream rows of one source at a pinned HF revision, capped and filtered per the catalog."""
    return _mirror_partition(context, object_store, hub)


@asset(group_name="sources", partitions_def=helper_partitions, code_version=function_code_version(__name__, "helper_rows", config=HELPERS_VERSION),
       kinds={"parquet", "huggingface"}, retry_policy=MIRROR_RETRY)
def helper_rows(context: AssetExecutionContext, object_store: ObjectStoreResource,
                hub: HubResource) -> MaterializeResult:
    """Problem statements OpenCodeReasoning-2 points at (TACO, APPS, code_contests, codeforces)."""
    return _mirror_partition(context, object_store, hub)


@asset(group_name="sources", partitions_def=source_partitions,
       code_version=function_code_version(__name__, "normalized_rows"), metadata=PER_SOURCE_METADATA, deps=[source_rows, AssetDep(helper_rows, partition_mapping=AllPartitionMapping())],
       kinds={"parquet"})
def normalized_rows(context: AssetExecutionContext, object_store: ObjectStoreResource) -> MaterializeResult:
    """One source in ChatML / Hermes tool calls / DPO pairs; unconvertible rows quarantined."""
    spec = CATALOG.by_name(context.partition_key)
    store = object_store.get_store()
    helpers = None
    if spec.name == "opencodereasoning_2":
        helpers = load_helper_questions(store, CATALOG.helpers)
    report = normalize_source(spec, store, helper_questions=helpers, log=context.log.info)
    q = sum(report.quarantined.values())
    return MaterializeResult(
        data_version=DataVersion(f"{report.revision}:{mirror_fingerprint(spec)}:{spec.adapter}"),
        metadata={
            "revision": report.revision,
            "rows_in": report.rows_in,
            "rows_out": report.rows_out,
            "quarantined": q,
            "quarantined_by_reason": MetadataValue.md(counts_table(report.quarantined)),
            "quarantine_table": report.quarantine_key or "none",
            "duplicate_ids_renamed": report.duplicate_ids,
            "uri": store.uri(report.key),
            "adapter": spec.adapter or "",
            "family": spec.family,
            "seconds": report.seconds,
            PARTITION_VERSION_KEY: SOURCE_VERSIONS[spec.name],
            "counts": MetadataValue.json({"in": report.rows_in, "out": report.rows_out,
                                          "quarantined": report.quarantined}),
        },
    )
