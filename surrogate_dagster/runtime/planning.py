"""Which (asset, partition)s to run: downstream of changed sources, or stale/missing ones.

A plan is `{AssetKey: set of partition keys}` (`None` is the one key of an unpartitioned asset).
`downstream_plan` follows Dagster's own partition mappings (identity between assets partitioned
by source, all partitions across an unpartitioned step), restricted to the asset keys allowed
(e.g. the sources and curation groups), so one changed source re-runs its own chain, the
cross-source steps and the mixtures, and nothing else. `execute_plan` runs a plan in-process in
dependency order (the laptop path); the sensor hands the same plan to Dagster as one run per
changed source.

`stale_plan` reads staleness from the event log through public instance calls only, with the
rules Dagster's UI applies: an (asset, partition) is MISSING without a materialization, and STALE
when its latest materialization recorded another code version than the asset has now, or an input
data version that a parent has since replaced (a parent partition re-materialized or re-observed
with a new data version after the materialization read it), or no input from a parent it now has.
One rule is the project's own: a partitioned asset whose definition metadata maps partitions to
versions (a source's own catalog entry, catalog/code_version.py) is STALE in the partitions whose
recorded version differs, so editing one source's cap re-runs that source alone. The plan also
holds a partition whose latest materialization looks fresh but whose output is gone from the
object store (a run killed while rewriting it, a deleted object): the event log alone cannot tell.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, materialize

from ..catalog.code_version import PARTITION_VERSION_KEY, PARTITION_VERSIONS_KEY

Plan = dict[AssetKey, set[str | None]]


def keys_in_groups(asset_graph, groups: Iterable[str]) -> set[AssetKey]:
    """Materializable asset keys of the given groups (whatever assets exist today)."""
    groups = set(groups)
    return {k for k in asset_graph.materializable_asset_keys if asset_graph.get(k).group_name in groups}


def downstream_plan(asset_graph, roots: Plan, allowed: set[AssetKey], instance=None) -> Plan:
    """Roots plus every allowed descendant partition, through the graph's partition mappings."""
    plan: Plan = {k: set(v) for k, v in roots.items()}
    frontier = [(k, p) for k, ps in roots.items() for p in ps]
    while frontier:
        key, part = frontier.pop()
        for child in asset_graph.get(key).child_keys:
            if child not in allowed:
                continue
            cdef = asset_graph.get(child).partitions_def
            if cdef is None:
                targets: list[str | None] = [None]
            elif part is None:  # an unpartitioned step feeds every partition downstream
                targets = list(cdef.get_partition_keys(dynamic_partitions_store=instance))
            else:
                targets = list(asset_graph.get_child_partition_keys_of_parent(part, key, child))
            for t in targets:
                if t not in plan.setdefault(child, set()):
                    plan[child].add(t)
                    frontier.append((child, t))
    return plan


def recuration_plan(asset_graph, changed_sources: Iterable[str], root: AssetKey,
                    groups: Iterable[str] = ("sources", "curation"), instance=None) -> Plan:
    """Changed partitions of `root` (source_rows) and what follows from them in `groups`."""
    changed = sorted(set(changed_sources))
    if not changed:
        return {}
    return downstream_plan(asset_graph, {root: set(changed)}, keys_in_groups(asset_graph, groups), instance)


def describe(plan: Plan) -> dict[str, Any]:
    """A plan as JSON-able {asset: [partitions] | "unpartitioned"}."""
    return {k.to_user_string(): (sorted(p for p in ps if p is not None) if any(ps) else "unpartitioned")
            for k, ps in sorted(plan.items(), key=lambda kv: kv[0].to_user_string())}


# Tags Dagster writes on every materialization (and, the data version, on observations).
DATA_VERSION_TAG = "dagster/data_version"
CODE_VERSION_TAG = "dagster/code_version"
INPUT_VERSION_TAG = "dagster/input_data_version/"
INPUT_POINTER_TAG = "dagster/input_event_pointer/"
# What Dagster records for an input that had no data version (a never-observed source).
UNVERSIONED = {"INITIAL", "NULL", None}
# Dagster leaves partitioned parents with this many partitions or more out of staleness.
PARENT_PARTITIONS_LIMIT = 100


class _EventLog:
    """Latest materialization/observation records, each query asked once per plan."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance
        self._cache: dict[tuple, Any] = {}

    def latest(self, key: AssetKey, partition: str | None, observed: bool = False,
               after: int | None = None, before: int | None = None):
        cache_key = (key, partition, observed, after, before)
        if cache_key not in self._cache:
            flt = AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None,
                                     after_storage_id=after, before_storage_id=before)
            fetch = self.instance.fetch_observations if observed else self.instance.fetch_materializations
            records = fetch(flt, limit=1).records
            self._cache[cache_key] = records[0] if records else None
        return self._cache[cache_key]

    def any_after(self, key: AssetKey, partitions: list[str], observed: bool, after: int) -> bool:
        """Whether any of the partitions has a record newer than storage id `after` (one query)."""
        flt = AssetRecordsFilter(asset_key=key, asset_partitions=partitions, after_storage_id=after)
        fetch = self.instance.fetch_observations if observed else self.instance.fetch_materializations
        return bool(fetch(flt, limit=1).records)

    def prefetch(self, key: AssetKey, partitions: list[str | None], per_partition: int = 3) -> None:
        """The latest materialization of many partitions in one query (newest first), instead of
        one query each: each query of the default SQLite storage opens a connection (~5-15 ms)."""
        todo = [p for p in partitions if p is not None and (key, p, False, None, None) not in self._cache]
        if len(todo) < 2:
            return
        limit = per_partition * len(todo)
        records = self.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=key, asset_partitions=todo), limit=limit).records
        for rec in records:
            self._cache.setdefault((key, rec.partition_key, False, None, None), rec)
        if len(records) < limit:  # every record was read: the partitions not seen have none
            for p in todo:
                self._cache.setdefault((key, p, False, None, None), None)


def recorded_output_keys(store, asset: AssetKey, partition: str | None, metadata: dict) -> list[str]:
    """Store keys an (asset, partition)'s materialization stored: every metadata value that is a
    URI inside ``store`` (a key, or a prefix ending in '/'), plus a per-source curation step's
    pointer and tables (those record no URI)."""
    from ..storage.layout import asset_output_keys
    from ..storage.markers import uri_key

    keys = []
    for value in metadata.values():
        text = getattr(value, "value", value)  # UrlMetadataValue / TextMetadataValue or a plain str
        key = uri_key(store, text) if isinstance(text, str) else None
        if key is not None:
            keys.append(key)
    return keys + (asset_output_keys(store, asset.to_user_string(), partition) or [])


def missing_output_plan(asset_graph, instance: DagsterInstance, store, keys: Iterable[AssetKey],
                        skip: Plan | None = None, log: _EventLog | None = None) -> Plan:
    """(asset, partition)s whose latest materialization names store outputs that are not there."""
    from ..storage.markers import missing_outputs

    skip = skip or {}
    log = log or _EventLog(instance)
    plan: Plan = {}
    for key in keys:
        pdef = asset_graph.get(key).partitions_def
        parts = pdef.get_partition_keys(dynamic_partitions_store=instance) if pdef else [None]
        log.prefetch(key, parts)
        for part in parts:
            if part in skip.get(key, ()):
                continue
            record = log.latest(key, part)
            if record is None or record.asset_materialization is None:
                continue  # never materialized: already MISSING to Dagster
            outputs = recorded_output_keys(store, key, part, dict(record.asset_materialization.metadata))
            if outputs and missing_outputs(store, outputs):
                plan.setdefault(key, set()).add(part)
    return plan


def default_store():
    """The object store of the active profile (SURROGATE_PROFILE), as `make run` uses it."""
    from ..catalog.loader import load_profile
    from ..storage.factory import store_from_profile_section

    return store_from_profile_section(load_profile().object_store.model_dump())


def _tags(record) -> dict[str, str]:
    event = record.event_log_entry.asset_materialization or record.event_log_entry.asset_observation
    return dict(event.tags or {}) if event is not None else {}


def _data_version(record) -> str | None:
    return _tags(record).get(DATA_VERSION_TAG) if record is not None else None


def _parent_partitions(asset_graph, key: AssetKey, partition: str | None, parent: AssetKey,
                       instance) -> list[str | None]:
    pdef = asset_graph.get(parent).partitions_def
    if pdef is None:
        return [None]
    if partition is None:  # an unpartitioned step reads every partition of its parent
        return list(pdef.get_partition_keys(dynamic_partitions_store=instance))
    subset = asset_graph.get_parent_partition_keys_for_child(partition, parent, key).partitions_subset
    return list(subset.get_partition_keys())


def _parent_changed(log: _EventLog, asset_graph, parent: AssetKey, parts: list[str | None],
                    tags: dict[str, str]) -> bool:
    """Whether a parent's data changed since a materialization read it (its recorded input tags)."""
    external = not asset_graph.get(parent).is_materializable
    name = parent.to_user_string()
    if parts == [None]:  # unpartitioned parent: its current data version against the recorded one
        current = _data_version(log.latest(parent, None, observed=external))
        recorded = tags[INPUT_VERSION_TAG + name]
        return not (recorded in UNVERSIONED and current in UNVERSIONED) and current != recorded
    if len(parts) >= PARENT_PARTITIONS_LIMIT:
        return False
    pointer = tags.get(INPUT_POINTER_TAG + name)
    if not (pointer and pointer.isdigit()):
        # The materialization read no record of this parent (a source not yet observed then):
        # Dagster does not count a first record as a change, and neither does the plan.
        return False
    cursor = int(pointer)
    if len(parts) > 1 and not log.any_after(parent, parts, external, cursor):
        return False  # the common case, nothing newer in any partition, in one query
    for part in parts:
        # a record of this parent partition written after the one the materialization read ...
        newer = log.latest(parent, part, observed=external, after=cursor)
        if newer is None:
            continue
        # ... counts when its data version differs from the one that partition had then
        before = log.latest(parent, part, observed=external, before=cursor + 1)
        if _data_version(newer) != _data_version(before):
            return True
    return False


def _partition_version_changed(node, partition: str | None, record) -> bool:
    """Whether the partition's own config changed since it was built: the asset's definition maps
    partitions to versions (PARTITION_VERSIONS_KEY) and the materialization recorded another."""
    versions = (node.metadata or {}).get(PARTITION_VERSIONS_KEY)
    versions = getattr(versions, "value", versions)
    if partition is None or not isinstance(versions, dict) or partition not in versions:
        return False
    recorded = record.event_log_entry.asset_materialization.metadata.get(PARTITION_VERSION_KEY)
    return getattr(recorded, "value", recorded) != versions[partition]


def partition_status(asset_graph, instance: DagsterInstance, key: AssetKey, partition: str | None,
                     log: _EventLog | None = None) -> str:
    """"MISSING", "STALE" or "FRESH" for one (asset, partition), from its latest materialization's tags."""
    log = log or _EventLog(instance)
    record = log.latest(key, partition)
    if record is None:
        return "MISSING"
    tags = _tags(record)
    node = asset_graph.get(key)
    if node.code_version is not None and tags.get(CODE_VERSION_TAG) != node.code_version:
        return "STALE"
    if _partition_version_changed(node, partition, record):
        return "STALE"
    for parent in sorted(node.parent_keys, key=lambda k: k.to_user_string()):
        if INPUT_VERSION_TAG + parent.to_user_string() not in tags:
            return "STALE"  # a dependency the materialization did not have
        parts = _parent_partitions(asset_graph, key, partition, parent, instance)
        if _parent_changed(log, asset_graph, parent, parts, tags):
            return "STALE"
    return "FRESH"


def stale_plan(asset_graph, instance: DagsterInstance, keys: Iterable[AssetKey] | None = None,
               store=None) -> Plan:
    """Every (asset, partition) whose status is MISSING or STALE (code, data or upstream changed),
    or whose recorded output is missing from ``store`` (default: the active profile's store)."""
    log = _EventLog(instance)
    keys = list(keys if keys is not None else asset_graph.materializable_asset_keys)
    plan: Plan = {}
    for key in keys:
        pdef = asset_graph.get(key).partitions_def
        parts = pdef.get_partition_keys(dynamic_partitions_store=instance) if pdef else [None]
        log.prefetch(key, parts)
        todo = {p for p in parts if partition_status(asset_graph, instance, key, p, log) != "FRESH"}
        if todo:
            plan[key] = todo
    gone = missing_output_plan(asset_graph, instance, store if store is not None else default_store(), keys, plan,
                               log)
    for key, parts in gone.items():
        plan.setdefault(key, set()).update(parts)
    return plan


def execute_plan(defs, instance: DagsterInstance, plan: Plan, log: Callable[[str], Any] = print,
                 tags: dict[str, str] | None = None) -> dict[tuple[str, str | None], bool]:
    """Run a plan in-process, asset by asset in topological order, one run per partition.

    A failed partition skips the partitions that depend on it; the rest keeps going. Returns
    {(asset, partition): success}.
    """
    graph = defs.resolve_asset_graph()
    assets = list(defs.assets or [])
    results: dict[tuple[str, str | None], bool] = {}
    failed: set[tuple[AssetKey, str | None]] = set()
    for key in graph.toposorted_asset_keys:
        for part in sorted(plan.get(key, ()), key=lambda p: p or ""):
            label = key.to_user_string() + (f"[{part}]" if part else "")
            blocked = [(pk, pp) for pk, pp in failed if pk in graph.get(key).parent_keys
                       and (pp is None or part is None or pp == part)]
            if blocked:
                log(f"  skip  {label}: an upstream partition failed")
                failed.add((key, part))
                results[(key.to_user_string(), part)] = False
                continue
            t0 = time.monotonic()
            res = materialize(assets, selection=[key], partition_key=part, instance=instance,
                              resources=defs.resources, raise_on_error=False, tags=tags)
            results[(key.to_user_string(), part)] = res.success
            if not res.success:
                failed.add((key, part))
            log(f"  {'ok  ' if res.success else 'FAIL'}  {label} ({time.monotonic() - t0:.1f}s)")
    return results
