"""Mirror one catalog source into the object store: raw/<source>/<revision>/ as Parquet.

Pure logic (no Dagster): the `source_rows` asset calls `mirror_source`. Re-mirroring the same
revision with the same catalog entry rewrites nothing: `_SUCCESS.json` is written last and
carries the entry's fingerprint, so a crash mid-mirror leaves no success marker and the next run
redoes the partition from scratch.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import cycle
from typing import Any

from ..catalog.loader import config_hash
from ..catalog.models import SourceSpec
from ..hub import HubClient
from ..storage.object_store import ObjectStore
from ..storage.parquet_io import parquet_schema_summary, rows_to_parquet_bytes
from .filters import Uncoercible, passes

PART_ROWS = 5000  # rows per Parquet part: bounds memory for 80k-row sources with long rows


@dataclass
class MirrorReport:
    source: str
    revision: str
    prefix: str
    rows: int
    cap: int | None
    shortfall: int
    bytes: int
    parts: list[str]
    filtered: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)
    schema: dict[str, str] = field(default_factory=dict)
    fingerprint: str = ""
    seconds: float = 0.0
    reused: bool = False


def mirror_fingerprint(spec: SourceSpec) -> str:
    """What decides the mirrored content besides the revision (notes/licence do not)."""
    return config_hash(spec.model_dump(mode="json", exclude={"notes", "license", "adapter"}))


def raw_prefix(source: str, revision: str) -> str:
    return f"raw/{source}/{revision}/"


def latest_pointer_key(source: str) -> str:
    return f"raw/{source}/_latest.json"


def read_latest(store: ObjectStore, source: str) -> dict:
    """The latest mirrored revision of a source, as recorded by `mirror_source`."""
    key = latest_pointer_key(source)
    if not store.exists(key):
        raise FileNotFoundError(f"source {source!r} has not been mirrored yet (no {key})")
    return json.loads(store.get_bytes(key))


def _interleave(streams: list[tuple[str, str, Iterator[dict]]]) -> Iterator[tuple[str, str, dict]]:
    """Round-robin over configs/splits so a cap samples from each of them, not just the first."""
    live = list(streams)
    while live:
        for item in list(live):
            config, split, it = item
            try:
                yield config, split, next(it)
            except StopIteration:
                live.remove(item)


def mirror_source(spec: SourceSpec, hub: HubClient, store: ObjectStore,
                  log: Callable[[str], Any] = print) -> MirrorReport:
    """Stream `spec` from the hub up to its cap with its filters, into the object store."""
    t0 = time.monotonic()
    revision = hub.current_revision(spec.hf_id, spec.revision)
    prefix = raw_prefix(spec.name, revision)
    fingerprint = mirror_fingerprint(spec)
    marker = prefix + "_SUCCESS.json"
    if store.exists(marker):
        done = json.loads(store.get_bytes(marker))
        if done.get("fingerprint") == fingerprint:
            done["reused"] = True
            log(f"{spec.name}@{revision[:12]}: already mirrored ({done['rows']} rows), nothing rewritten")
            _write_latest(store, spec.name, revision)
            return MirrorReport(**done)

    # A killed earlier attempt (or a larger cap) may have left parts under this prefix: they are
    # never read (the marker lists the parts), but no partial object may outlive a re-run.
    for stale in store.list(prefix):
        store.delete(stale)
    streams = [(c, s, hub.iter_rows(spec.hf_id, c, s, revision, spec.columns))
               for c in spec.configs for s in spec.splits]
    kept: list[dict] = []
    quarantine: list[dict] = []
    filtered: Counter[str] = Counter()
    quarantined: Counter[str] = Counter()
    parts: list[str] = []
    total_bytes = 0
    n_kept = 0
    schema: dict[str, str] = {}
    seen = 0

    def flush() -> None:
        nonlocal total_bytes, schema
        if not kept:
            return
        data = rows_to_parquet_bytes(kept)
        key = f"{prefix}part-{len(parts):05d}.parquet"
        store.put_bytes(key, data)
        parts.append(key)
        total_bytes += len(data)
        if not schema:
            schema = parquet_schema_summary(data)
        kept.clear()

    for config, split, row in _interleave(streams):
        if spec.cap is not None and n_kept >= spec.cap:
            break
        seen += 1
        ref = {"_config": config, "_split": split, "_index": seen - 1}
        if "__unreadable__" in row:
            quarantined["unreadable_row"] += 1
            quarantine.append({**ref, "reason": "unreadable_row", "detail": row["__unreadable__"],
                               "row_json": row.get("__line__", "")})
            continue
        reason = None
        try:
            for rule in spec.filters:
                if not passes(rule, row, config):
                    reason = f"filter_{rule.name}"
                    break
        except Uncoercible as e:
            quarantined[f"filter_uncoercible_{rule.column}"] += 1
            quarantine.append({**ref, "reason": f"filter_uncoercible_{rule.column}",
                               "detail": str(e), "row_json": json.dumps(row, default=str)})
            continue
        if reason:
            filtered[reason] += 1
            continue
        kept.append({**row, **ref})
        n_kept += 1
        if len(kept) >= PART_ROWS:
            flush()
        if seen % 10000 == 0:
            log(f"{spec.name}: {seen} rows read, {n_kept} kept")
    flush()
    if quarantine:
        data = rows_to_parquet_bytes(quarantine)
        store.put_bytes(prefix + "quarantine.parquet", data)
    report = MirrorReport(
        source=spec.name, revision=revision, prefix=prefix, rows=n_kept, cap=spec.cap,
        shortfall=max(0, (spec.cap or n_kept) - n_kept), bytes=total_bytes, parts=parts,
        filtered=dict(filtered), quarantined=dict(quarantined), schema=schema,
        fingerprint=fingerprint, seconds=round(time.monotonic() - t0, 3),
    )
    store.put_bytes(marker, json.dumps(asdict(report), indent=1).encode())
    _write_latest(store, spec.name, revision)
    log(f"{spec.name}@{revision[:12]}: {n_kept} rows mirrored, {sum(filtered.values())} filtered, "
        f"{sum(quarantined.values())} quarantined")
    return report


def _write_latest(store: ObjectStore, source: str, revision: str) -> None:
    key = latest_pointer_key(source)
    body = json.dumps({"source": source, "revision": revision, "prefix": raw_prefix(source, revision)})
    if not store.exists(key) or store.get_bytes(key).decode() != body:
        store.put_bytes(key, body.encode())
