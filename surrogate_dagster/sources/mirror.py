"""Mirror one catalog source into the object store: raw/<source>/<revision>/ as Parquet (keys:
storage/layout.py).

Pure logic (no Dagster): the `source_rows` asset calls `mirror_source`. Under a cap, a source
with `group_by` (the column naming the problem) is sampled over problems (sampling.py); any
other source keeps the first `cap` rows that pass the filters. Re-mirroring the same
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
from typing import Any

from ..catalog.loader import config_hash
from ..catalog.models import SourceSpec
from ..hub import HubClient
from ..storage.layout import raw_pointer, raw_revision_prefix, success_marker
from ..storage.object_store import ObjectStore
from ..storage.parquet_io import parquet_schema_summary, rows_to_parquet_bytes
from .filters import Uncoercible, passes
from .sampling import candidate, group_of, group_stats, row_rank, spread_sample

PART_ROWS = 5000  # rows per Parquet part: bounds memory for 80k-row sources with long rows
# A source whose readable share falls below this is broken upstream (wrong config, a format change),
# not noisy: the mirror fails, naming the quarantine file, instead of succeeding with a few rows.
MAX_QUARANTINED_SHARE = 0.5


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
    # Sampling under the cap (sampling.py): the problem columns, distinct problems among the
    # mirrored rows and the most rows of one problem; `candidates` / `groups_available` are the
    # rows that passed the filters (within the pool) and their problems. Without `group_by`
    # every row is its own problem.
    group_by: list[str] = field(default_factory=list)
    groups: int = 0
    rows_per_group_max: int = 0
    candidates: int = 0
    groups_available: int = 0


SPLIT_POSITION = "_split_index"  # helper rows: position within their upstream config/split


def mirror_fingerprint(spec: SourceSpec) -> str:
    """What decides the mirrored content besides the revision (notes/licence do not)."""
    data = spec.model_dump(mode="json", exclude={"notes", "license", "adapter"})
    if spec.family == "helper":
        data["tags"] = [SPLIT_POSITION]  # helper mirrors carry the split position column
    return config_hash(data)


def read_latest(store: ObjectStore, source: str) -> dict:
    """The latest mirrored revision of a source, as recorded by `mirror_source`."""
    key = raw_pointer(source)
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


def unencodable_field(value: Any, path: str = "") -> str | None:
    """The path of the first string in `value` that UTF-8 cannot encode (a lone surrogate), else None."""
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "<row>"
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        hit = unencodable_field(v, f"{path}.{k}" if path else str(k))
        if hit:
            return hit
    return None


def _candidates(spec: SourceSpec, hub: HubClient, revision: str, quarantine: list[dict],
                filtered: Counter[str], quarantined: Counter[str]) -> Iterator[tuple[int, dict, dict]]:
    """(ordinal, mirror tags, row) of every row that passes the filters, in stream order.

    Unreadable rows and rows a filter cannot judge are added to `quarantine` (and counted);
    rows a filter drops are counted in `filtered`. The ordinal is the row's position in the
    interleaved stream, which is fixed for a pinned revision.
    """
    streams = [(c, s, hub.iter_rows(spec.hf_id, c, s, revision, spec.columns))
               for c in spec.configs for s in spec.splits]
    positions: Counter[tuple[str, str]] = Counter()
    for ordinal, (config, split, row) in enumerate(_interleave(streams)):
        ref = {"_config": config, "_split": split, "_index": ordinal}
        if spec.family == "helper":
            # OpenCodeReasoning-2 names some helper rows by their position in the upstream split
            # (ocr2_questions.py): record it as streamed, unreadable rows included.
            ref[SPLIT_POSITION] = positions[(config, split)]
        positions[(config, split)] += 1
        if "__unreadable__" in row:
            quarantined["unreadable_row"] += 1
            quarantine.append({**ref, "reason": "unreadable_row", "detail": row["__unreadable__"],
                               "row_json": row.get("__line__", "")})
            continue
        bad_text = unencodable_field(row)
        if bad_text:
            # JSON may spell a lone UTF-16 surrogate ("\ud800"); Parquet (UTF-8) cannot store it.
            quarantined["unencodable_text"] += 1
            quarantine.append({**ref, "reason": "unencodable_text", "detail": f"{bad_text}: lone surrogate",
                               "row_json": json.dumps(row, default=str)})
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
        yield ordinal, ref, row


def _choose(spec: SourceSpec, hub: HubClient, revision: str, quarantine: list[dict],
            filtered: Counter[str], quarantined: Counter[str],
            log: Callable[[str], Any]) -> tuple[Iterator[dict], dict[str, int]]:
    """The rows to mirror (tagged, in stream order) and the sampling counts.

    Without `group_by` the first `cap` rows that pass the filters are taken, reading no further
    (a 19.5 GB config is streamed only up to its cap). With `group_by` the candidates (all of
    them, or the first `sample_pool`) are ranked in a first pass that keeps only hashes, the
    choice is spread over problems (sampling.spread_sample), and a second pass over the same
    pinned stream keeps the chosen rows.
    """
    if not spec.group_by:
        def first_rows() -> Iterator[dict]:
            n = 0
            for _, ref, row in _candidates(spec, hub, revision, quarantine, filtered, quarantined):
                if spec.cap is not None and n >= spec.cap:
                    return
                n += 1
                yield {**row, **ref}
        return first_rows(), {}

    pool = []
    for ordinal, _, row in _candidates(spec, hub, revision, quarantine, filtered, quarantined):
        pool.append(candidate(ordinal, row, spec.group_by, spec.sample_seed))
        if spec.sample_pool is not None and len(pool) >= spec.sample_pool:
            break
    chosen = {c.ordinal: c for c in spread_sample(pool, spec.cap, spec.sample_seed)}
    available = group_stats(c.group for c in pool)
    log(f"{spec.name}: {len(pool)} candidate rows over {available['groups']} problems; "
        f"{len(chosen)} chosen, spread over problems")
    counts = {"candidates": len(pool), "groups_available": available["groups"]}

    def chosen_rows() -> Iterator[dict]:
        left = len(chosen)
        for ordinal, ref, row in _candidates(spec, hub, revision, [], Counter(), Counter()):
            if left == 0:
                return
            c = chosen.get(ordinal)
            if c is None:
                continue
            if row_rank(spec.sample_seed, row) != c.rank:
                raise RuntimeError(f"{spec.name}@{revision}: row {ordinal} changed between the two passes "
                                   "over the stream; a pinned revision must stream the same rows in order")
            left -= 1
            yield {**row, **ref}

    return chosen_rows(), counts


def mirror_source(spec: SourceSpec, hub: HubClient, store: ObjectStore,
                  log: Callable[[str], Any] = print) -> MirrorReport:
    """Stream `spec` from the hub up to its cap with its filters, into the object store."""
    t0 = time.monotonic()
    revision = hub.current_revision(spec.hf_id, spec.revision)
    prefix = raw_revision_prefix(spec.name, revision)
    fingerprint = mirror_fingerprint(spec)
    marker = success_marker(prefix)
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
    kept: list[dict] = []
    quarantine: list[dict] = []
    filtered: Counter[str] = Counter()
    quarantined: Counter[str] = Counter()
    parts: list[str] = []
    total_bytes = 0
    n_kept = 0
    schema: dict[str, str] = {}
    groups: Counter[str] = Counter()

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

    rows, counts = _choose(spec, hub, revision, quarantine, filtered, quarantined, log)
    for row in rows:
        kept.append(row)
        n_kept += 1
        groups[group_of(row, spec.group_by or []) or f"row:{n_kept}"] += 1
        if len(kept) >= PART_ROWS:
            flush()
        if n_kept % 10000 == 0:
            log(f"{spec.name}: {n_kept} rows kept")
    flush()
    if quarantine:
        data = rows_to_parquet_bytes(quarantine)
        store.put_bytes(prefix + "quarantine.parquet", data)
    read = n_kept + sum(filtered.values()) + sum(quarantined.values())
    if quarantine and len(quarantine) > MAX_QUARANTINED_SHARE * read:
        raise RuntimeError(
            f"{spec.name}@{revision[:12]}: {len(quarantine)} of {read} rows quarantined "
            f"({dict(quarantined)}), more than {MAX_QUARANTINED_SHARE:.0%}; nothing is published. "
            f"Rows and reasons: {store.uri(prefix + 'quarantine.parquet')}")
    stats = group_stats(groups.elements())
    report = MirrorReport(
        source=spec.name, revision=revision, prefix=prefix, rows=n_kept, cap=spec.cap,
        shortfall=max(0, (spec.cap or n_kept) - n_kept), bytes=total_bytes, parts=parts,
        filtered=dict(filtered), quarantined=dict(quarantined), schema=schema,
        fingerprint=fingerprint, seconds=round(time.monotonic() - t0, 3),
        group_by=list(spec.group_by or []), groups=stats["groups"],
        rows_per_group_max=stats["rows_per_group_max"],
        candidates=counts.get("candidates", n_kept), groups_available=counts.get("groups_available", stats["groups"]),
    )
    store.put_bytes(marker, json.dumps(asdict(report), indent=1).encode())
    _write_latest(store, spec.name, revision)
    log(f"{spec.name}@{revision[:12]}: {n_kept} rows mirrored over {stats['groups']} problems, "
        f"{sum(filtered.values())} filtered, {sum(quarantined.values())} quarantined")
    return report


def _write_latest(store: ObjectStore, source: str, revision: str) -> None:
    key = raw_pointer(source)
    body = json.dumps({"source": source, "revision": revision, "prefix": raw_revision_prefix(source, revision)})
    if not store.exists(key) or store.get_bytes(key).decode() != body:
        store.put_bytes(key, body.encode())
