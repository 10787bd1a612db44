"""The per-source sanitize step over rows: every text field of every row, in parallel chunks.

``sanitize_rows(rows, sanitizer, workers)`` is what ``sanitized_rows`` runs and what
``benchmarks/curation_chain.py`` times. Per chunk of rows (``parallel.map_chunks``: the
workers inherit the sanitizer and its NER model by fork, and get each chunk's rows pickled):

1. when the sanitizer has an NER model, the prose of the whole chunk is tagged in one batched
   call (``ner.prefetch``): a spaCy pipe over hundreds of segments is ~1.5x cheaper than one
   call per text, and NER is by far the most expensive detector;
2. the row's text fields are sanitized together (``Sanitizer.sanitize_row``: a secret found in
   one field is redacted in every field); only rows that changed go back to the parent, with
   their per-category counts (most rows have nothing to redact).

Results do not depend on ``workers`` or the chunk size. An NER backend that is not fork-safe
(torch-based ``TransformersNER``) runs in the calling process only (``workers`` is ignored).
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .parallel import DEFAULT_CHUNK_ROWS, map_chunks
from .text import map_row_text, row_texts
from ..sanitize.engine import Sanitizer
from ..sanitize.ner import prefetch


@dataclass
class SanitizedRows:
    """The sanitized partition (unchanged rows are the input objects), rows changed, counts."""

    rows: list[dict]
    changed: int = 0
    counts: Counter = field(default_factory=Counter)
    # CPU seconds, all workers: "ner" (the batched model calls) and "detectors" (the rest)
    cpu_seconds: Counter = field(default_factory=Counter)


def _sanitize_chunk(sanitizer: Sanitizer, rows: Sequence[dict], start: int, end: int
                    ) -> tuple[list[tuple[int, dict, Counter]], Counter]:
    """(index, sanitized row, category counts) for the rows of rows[start:end] that changed, and
    the chunk's CPU seconds per block (a map_chunks worker)."""
    ner = sanitizer.ner_backend
    t0 = time.process_time()
    if ner is not None:
        prefetch([t for i in range(start, end) for t in row_texts(rows[i])], ner)
    t1 = time.process_time()
    out = []
    for i in range(start, end):
        row_counts: Counter = Counter()
        # one row is one document for redaction by value: a secret found in one turn is
        # redacted in every turn (a tool call's argument echoed in the tool's result)
        results = iter(sanitizer.sanitize_row(row_texts(rows[i])))

        def clean(text: str) -> str:
            res = next(results)
            if res.findings:
                row_counts.update({k: v for k, v in res.counts.items() if v})
            return res.text

        new = map_row_text(rows[i], clean)
        if row_counts:
            out.append((i, new, row_counts))
    return out, Counter(ner=t1 - t0, detectors=time.process_time() - t1)


def sanitize_rows(rows: Sequence[dict], sanitizer: Sanitizer, workers: int = 1,
                  chunk_size: int = DEFAULT_CHUNK_ROWS,
                  progress: Callable[[int, int], None] | None = None) -> SanitizedRows:
    """Sanitize every text of every row (module docstring); ``progress(done, total)`` per chunk."""
    if not getattr(sanitizer.ner_backend, "fork_safe", True):
        workers = 1
    result = SanitizedRows(list(rows))
    for part, cpu in map_chunks(_sanitize_chunk, sanitizer, rows, workers, chunk_size, progress):
        result.cpu_seconds.update(cpu)
        for i, new, counts in part:
            result.rows[i] = new
            result.changed += 1
            result.counts.update(counts)
    return result
