"""Exact deduplication across all sources: SHA-256 of normalized text.

Two rows are exact duplicates when their texts are equal after :func:`normalize_for_hash`
(Unicode NFC, every whitespace run collapsed to one space, ends stripped). Collapsing whitespace
on purpose makes a re-indented or re-wrapped copy an *exact* duplicate: for training data the
layout difference carries no signal, and MinHash would catch it anyway at a higher cost.

Which copy survives must not depend on the order rows happen to arrive in (Dagster partitions
materialize in any order), so :class:`ExactDeduper` sorts every (source, id) by a fixed key:
the position of the source in ``source_priority`` (unlisted sources after listed ones, by name),
then the source name, then the row id. The first row of each digest is kept; every later one is
dropped with reason ``"exact_duplicate"`` and the kept twin's (source, id).
Incremental use: the digests depend on one row only, so they can be computed per source when
that source is (re-)curated (:func:`sha256_text`, or :func:`digest_texts` with worker
processes) and stored with it; the cross-source step then only sorts digests
(:meth:`ExactDeduper.find_duplicates_digests`), and re-curating one source re-hashes only it.
No Dagster imports: the assets call this.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from . import minhash_numpy as mnp
from .parallel import map_chunks

REASON = "exact_duplicate"
_WS = re.compile(r"\s+")  # the definition normalize_for_hash implements (tested equal)


def normalize_for_hash(text: str) -> str:
    """NFC-normalize, collapse whitespace runs to one space and strip the ends."""
    if not isinstance(text, str):
        raise TypeError(f"normalize_for_hash expects str, got {type(text).__name__}")
    # str.split() splits on runs of the characters str.isspace() accepts, the same set as the
    # regex \s: equal to _WS.sub(" ", t).strip(), without building the match objects.
    return " ".join(unicodedata.normalize("NFC", text).split())


def sha256_text(text: str) -> str:
    """Hex SHA-256 of the normalized text (UTF-8)."""
    return hashlib.sha256(normalize_for_hash(text).encode("utf-8")).hexdigest()


def digest_texts(texts: Sequence[str], workers: int = 1) -> list[str]:
    """``[sha256_text(t) for t in texts]``, over ``workers`` forked processes if > 1.

    With numba installed, the ASCII texts (NFC leaves ASCII unchanged) have their whitespace
    collapsed by one compiled call per chunk (:func:`.minhash_kernels.collapse_whitespace`)
    instead of ``str.split`` building a string per word; the digests are the same.
    """
    mnp.warm_up()  # load the compiled kernels once, before forking
    return [d for part in map_chunks(_digest_chunk, None, texts, workers) for d in part]


# the ASCII characters str.split() splits on (str.isspace: also \x1c-\x1f)
_ASCII_SPACE = np.array([chr(i).isspace() for i in range(128)], dtype=np.bool_)


def _digest_chunk(_: None, texts: Sequence[str], start: int, end: int) -> list[str]:
    part = texts[start:end]
    k = mnp.kernels()
    rows = [i for i, t in enumerate(part) if isinstance(t, str) and t.isascii()] if k is not None else []
    if not rows:
        return [sha256_text(t) for t in part]
    out: list[str | None] = [None] * len(part)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(part[i]) for i in rows), dtype=np.int64, count=len(rows)), out=offsets[1:])
    buf = np.frombuffer("".join([part[i] for i in rows]).encode("ascii"), dtype=np.uint8)
    norm, bounds = k.collapse_whitespace(buf, offsets, _ASCII_SPACE)
    view, bounds = memoryview(norm), bounds.tolist()
    for j, i in enumerate(rows):
        out[i] = hashlib.sha256(view[bounds[j]:bounds[j + 1]]).hexdigest()
    return [d if d is not None else sha256_text(t) for d, t in zip(out, part)]


@dataclass(frozen=True)
class ExactDuplicate:
    """A dropped row and the row kept in its place."""

    source: str
    id: str
    kept_source: str
    kept_id: str
    digest: str
    reason: str = REASON


class ExactDeduper:
    """Finds exact duplicates across sources with a deterministic survivor.

    Args:
        source_priority: sources in preference order; a duplicate pair keeps the row of the
            source listed first. Sources not listed rank after all listed ones, by name.
    """

    def __init__(self, source_priority: Sequence[str] = ()) -> None:
        if len(set(source_priority)) != len(source_priority):
            raise ValueError(f"source_priority lists a source twice: {list(source_priority)}")
        self._rank = {s: i for i, s in enumerate(source_priority)}

    def sort_key(self, source: str, row_id: str) -> tuple[int, str, str]:
        """The order in which rows claim a digest (lowest key wins)."""
        return (self._rank.get(source, len(self._rank)), source, row_id)

    def find_duplicates(self, rows: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], ExactDuplicate]:
        """Return ``{(source, id): ExactDuplicate}`` for every row to drop.

        ``rows`` yields ``(source, id, text)`` in any order; only digests are held in memory.
        A (source, id) seen twice is bad input (ids must be unique within a source) and raises.
        """
        return self.find_duplicates_digests((s, i, sha256_text(t)) for s, i, t in rows)

    def find_duplicates_digests(self, rows: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], ExactDuplicate]:
        """:meth:`find_duplicates` from precomputed ``(source, id, sha256_text(text))`` triples."""
        keyed: list[tuple[tuple[int, str, str], str]] = []
        seen: set[tuple[str, str]] = set()
        for source, row_id, digest in rows:
            if (source, row_id) in seen:
                raise ValueError(f"duplicate row key ({source!r}, {row_id!r}): ids must be unique per source")
            seen.add((source, row_id))
            keyed.append((self.sort_key(source, row_id), digest))
        keyed.sort()
        first: dict[str, tuple[str, str]] = {}
        dropped: dict[tuple[str, str], ExactDuplicate] = {}
        for (_, source, row_id), digest in keyed:
            kept = first.setdefault(digest, (source, row_id))
            if kept != (source, row_id):
                dropped[(source, row_id)] = ExactDuplicate(source, row_id, kept[0], kept[1], digest)
        return dropped
