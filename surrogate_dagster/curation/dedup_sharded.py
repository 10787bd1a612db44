"""Cross-source deduplication (exact + near) in bounded memory.

No step holds the corpus. The inputs are a reader that streams one source's ``(row_id, text)``
pairs (called once per source per pass; one source's rows at a time) and each source's MinHash
signature folder (:func:`.minhash.compute_signatures`, already sharded by band on disk as
``bucket_XXX`` files).

Exact duplicates. Pass 1 reads the sources one after the other, hashes each text
(:func:`.exact_dedup.digest_texts`, ``batch_rows`` texts at a time) and appends
``[digest, source, id]`` lines to ``shards`` files under ``work_dir``, the shard chosen by the
digest's leading bytes. Every copy of a text has the same digest, hence the same shard, so each
shard is decided alone by :meth:`.exact_dedup.ExactDeduper.find_duplicates_digests` (same
survivor rule, same decisions as one global pass). Memory: one shard's digests.

Near duplicates. The LSH stage reads one band's records of all sources at a time (~68 bytes a
document with 8 hashes per band) and keeps only the candidate pairs; the true-Jaccard check then
re-reads each source and shingles only the candidate pairs' documents
(:func:`.minhash.near_duplicates_streaming`). Memory: one band's records, the candidate pairs
and their shingle sets.

The decisions equal those of one in-memory pass over a text dict of all sources (the reference
in test_dedup_sharded.py): near duplicates are searched among all rows, and a row already dropped
as an exact duplicate keeps its exact decision. No Dagster imports.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from .exact_dedup import ExactDeduper, digest_texts
from .minhash import THRESHOLD, near_duplicates_streaming

ReadTexts = Callable[[str], Iterable[tuple[str, str]]]
DEFAULT_SHARDS = 16
DEFAULT_BATCH_ROWS = 2048


@dataclass
class DedupOutcome:
    """``decisions``: ``"source\\tid" -> {"reason", "kept": [source, id], ("jaccard")}`` for every
    dropped row; ``stats`` for asset metadata."""

    decisions: dict[str, dict] = field(default_factory=dict)
    stats: dict[str, object] = field(default_factory=dict)


def _batches(pairs: Iterable[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    it = iter(pairs)
    while batch := list(islice(it, size)):
        yield batch


def _shard_of(digest: str, shards: int) -> int:
    return int(digest[:8], 16) % shards


def write_digest_shards(sources: Sequence[str], read_texts: ReadTexts, out_dir: Path, shards: int = DEFAULT_SHARDS,
                        workers: int = 1, batch_rows: int = DEFAULT_BATCH_ROWS) -> dict[str, int]:
    """Pass 1 of exact dedup: every row's digest, appended to its shard file; rows per source.

    Raises ValueError on an id seen twice within a source (ids must be unique per source).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [open(out_dir / f"digests-{k:03d}.jsonl", "w", encoding="utf-8") for k in range(shards)]
    counts: dict[str, int] = {}
    try:
        for source in sources:
            seen: set[str] = set()
            n = 0
            for batch in _batches(read_texts(source), batch_rows):
                ids = [i for i, _ in batch]
                for i in ids:
                    if i in seen:
                        raise ValueError(f"duplicate row key ({source!r}, {i!r}): ids must be unique per source")
                    seen.add(i)
                for i, d in zip(ids, digest_texts([t for _, t in batch], workers=workers)):
                    files[_shard_of(d, shards)].write(json.dumps([d, source, i]) + "\n")
                n += len(batch)
            counts[source] = n
    finally:
        for fh in files:
            fh.close()
    return counts


def exact_from_shards(out_dir: Path, priority: Sequence[str], shards: int = DEFAULT_SHARDS):
    """Pass 2 of exact dedup: ``{(source, id): ExactDuplicate}``, deciding one shard at a time."""
    deduper = ExactDeduper(source_priority=priority)
    dropped = {}
    for k in range(shards):
        with open(out_dir / f"digests-{k:03d}.jsonl", encoding="utf-8") as fh:
            triples = [(s, i, d) for d, s, i in map(json.loads, fh)]
        dropped.update(deduper.find_duplicates_digests(triples))
    return dropped


SCRATCH_PREFIX = "dedup-shards-"


def cross_source_dedup(sources: Sequence[str], read_texts: ReadTexts, sig_dirs: Mapping[str, Path | str],
                       work_dir: Path | str, threshold: float = THRESHOLD, shards: int = DEFAULT_SHARDS,
                       workers: int = 1, batch_rows: int = DEFAULT_BATCH_ROWS) -> DedupOutcome:
    """Exact and near duplicates across ``sources`` (in priority order: the first source's copy
    is kept), streaming each source through ``read_texts`` (twice: digests, then candidate
    texts). Scratch files go to a folder of this call's own under ``work_dir``, removed at the end
    (folders of killed runs are swept after a day)."""
    if len(set(sources)) != len(sources):
        raise ValueError(f"sources listed twice: {list(sources)}")
    missing = [s for s in sources if s not in sig_dirs]
    if missing:
        raise ValueError(f"no signature folder for sources {missing}")
    root = Path(work_dir)
    root.mkdir(parents=True, exist_ok=True)
    # A folder of this call's own: two calls deduplicating at once never share (or delete) shards.
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=root))
    try:
        rows = write_digest_shards(sources, read_texts, scratch, shards, workers, batch_rows)
        exact = exact_from_shards(scratch, sources, shards)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = DedupOutcome()
    for (s, i), d in exact.items():
        out.decisions[f"{s}\t{i}"] = {"reason": "exact_duplicate", "kept": [d.kept_source, d.kept_id]}

    def fetch(source: str, ids: set[str]) -> Iterator[tuple[str, str]]:
        return ((i, t) for i, t in read_texts(source) if i in ids)

    near = near_duplicates_streaming({s: Path(sig_dirs[s]) for s in sources}, fetch, threshold=threshold,
                                     priority=sources, threads=workers)
    for (s, i), nd in near.dropped.items():
        key = f"{s}\t{i}"
        if key not in out.decisions:
            out.decisions[key] = {"reason": "near_duplicate", "kept": [nd.kept_partition, nd.kept_doc_id],
                                  "jaccard": round(nd.jaccard, 3)}
    by_reason = Counter(v["reason"] for v in out.decisions.values())
    out.stats = {"docs": sum(rows.values()), "rows_by_source": rows, "digest_shards": shards,
                 "dropped_by_reason": dict(by_reason), "near": near.stats}
    return out
