"""Curating rows made outside the sources (synthesized traces, execution-graded pairs).

Pure logic, no Dagster. A synthesized set goes through the same blocks as a source, against the
corpus the sources already formed:

1. sanitize (the same :class:`Sanitizer` as ``sanitized_rows``): a planner or a sandbox run can
   echo a credential or an address as easily as a scraped row;
2. exact dedup (SHA-256 of :func:`.text.dedup_text`) against every source's filtered rows and
   within the set (first row wins);
3. near dedup (MinHash + true Jaccard, :func:`.minhash.find_near_duplicates`) against the
   sources' signature folders; sources always win a cluster, so only synthesized rows are dropped;
4. decontamination against the benchmark n-gram index.

Drop reasons are the ones the sources get (``exact_duplicate``, ``near_duplicate``, the
decontamination reason), so the mixtures and the lineage report count them the same way.
Filters (AST validity, heuristics) are not applied: traces and graded pairs have their own
validators upstream (dual validation, sandbox grading).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .decontam import Decontaminator
from .exact_dedup import digest_texts
from .minhash import MinhashSpec, compute_signatures, find_near_duplicates
from ..sanitize import Sanitizer
from .sanitize_stage import sanitize_rows
from .text import dedup_text, row_text


@dataclass
class CuratedSynthRows:
    kept: list[dict]
    dropped: list[dict]  # {"id", "reason", "detail" (JSON)}
    reasons: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)  # sanitizer findings by category
    rows_changed: int = 0


def curate_synth_rows(
    name: str,
    rows: Sequence[dict],
    *,
    sanitizer: Sanitizer,
    source_rows: Callable[[str], list[dict]],
    source_signatures: Mapping[str, Path],
    priority: Sequence[str],
    spec: MinhashSpec,
    threshold: float,
    decontaminator: Decontaminator,
    work_dir: Path,
    workers: int = 1,
    chunk_rows: int = 256,
) -> CuratedSynthRows:
    """Sanitize, dedup (against the sources and within the set) and decontaminate ``rows``.

    ``source_rows(source)``: that source's filtered rows (read lazily, once per source);
    ``source_signatures``: each source's MinHash folder; ``priority``: sources in keep order.
    """
    if name in source_signatures:
        raise ValueError(f"synthesized set {name!r} has the name of a source")
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise ValueError(f"{name}: row id {dup!r} appears twice")
    san = sanitize_rows(rows, sanitizer, workers=workers, chunk_size=chunk_rows)
    out = CuratedSynthRows(kept=[], dropped=[], findings=san.counts, rows_changed=san.changed)
    rows = san.rows

    cache: dict[str, dict[str, str]] = {}

    def texts_of(source: str) -> dict[str, str]:
        if source not in cache:
            cache[source] = {r["id"]: dedup_text(r) for r in source_rows(source)}
        return cache[source]

    texts = [dedup_text(r) for r in rows]
    drop: dict[str, tuple[str, dict]] = {}

    # exact: digests of the sources, one source at a time (only digests are held)
    own = digest_texts(texts, workers=workers)
    wanted = set(own)
    seen: dict[str, list[str]] = {}
    for source in priority:
        for (sid, _), d in zip(texts_of(source).items(), digest_texts(list(texts_of(source).values()), workers)):
            if d in wanted and d not in seen:
                seen[d] = [source, sid]
    for row, d in zip(rows, own):
        if d in seen:
            drop[row["id"]] = ("exact_duplicate", {"kept": seen[d]})
        else:
            seen[d] = [name, row["id"]]

    # near: this set's signatures beside the sources' folders; sources rank first
    sig_dir = Path(work_dir) / name
    shutil.rmtree(sig_dir, ignore_errors=True)
    live = [(r["id"], t) for r, t in zip(rows, texts) if r["id"] not in drop]
    if live:
        compute_signatures(live, sig_dir, spec, workers=workers)
        own_text = dict(live)
        near = find_near_duplicates({**source_signatures, name: sig_dir},
                                    lambda p, d: own_text[d] if p == name else texts_of(p)[d],
                                    threshold=threshold, priority=[*priority, name])
        for (part, doc), nd in near.dropped.items():
            if part == name:
                drop[doc] = ("near_duplicate", {"kept": [nd.kept_partition, nd.kept_doc_id],
                                                "jaccard": round(nd.jaccard, 3)})

    # decontamination: the whole row, as for the sources
    rest = [r for r in rows if r["id"] not in drop]
    for row, m in zip(rest, decontaminator.check_many([row_text(r) for r in rest], workers=workers,
                                                      chunk_size=chunk_rows)):
        if m:
            drop[row["id"]] = (m.reason, {"benchmark": m.benchmark, "item_id": m.item_id,
                                          "longest_match_tokens": m.longest_match_tokens,
                                          "matched_ngrams": m.matched_ngrams})

    for row in rows:
        if row["id"] in drop:
            reason, detail = drop[row["id"]]
            out.reasons[reason] += 1
            out.dropped.append({"id": row["id"], "reason": reason, "detail": json.dumps(detail)})
        else:
            out.kept.append(row)
    return out
