"""Benchmark decontamination: an n-gram index of benchmark items and a longest-match checker.

Normalization: Unicode NFKC, lowercase, then tokens ``\\w+|[^\\w\\s]``. Whitespace never
becomes a token, so re-indented, re-wrapped and re-cased copies produce the same token stream.
An n-gram (default n=13) is hashed to 64 bits (xxh3 per token, polynomial combination in
numpy, splitmix64 finish); :class:`BenchmarkIndex` stores the sorted hashes with the item each
came from, so a row is checked with one vectorized ``searchsorted``.

Boilerplate pruning: an n-gram found in more than ``max_item_df`` distinct benchmark items
(LeetCode's "Constraints: 1 <= nums.length <= 10^5 ..." lines, HumanEval's METADATA header,
MBPP's "Write a function to ...") says nothing about any one item but is common in clean
code and problem text, so it is dropped from the index (count kept in ``meta``).

Minimum-match rule: a row matches an item when it contains at least
``min(min_matches, item_ngrams)`` distinct n-grams of that item (``min_matches`` default 3, i.e.
an overlap of at least n+2 = 15 contiguous tokens, or several separate 13-token overlaps).
The ``min(...)`` keeps short items (a BFCL question of 14 tokens has 2 n-grams) detectable.
A single 13-gram shared with one item is the typical false positive on clean code (a common
idiom written the same way), which is why one n-gram alone is not enough.

Scoring: among the items that pass the rule, the reported one has the longest contiguous run
of matched tokens (``longest_match_tokens`` = consecutive matched n-gram positions + n - 1),
ties broken by the number of matched n-grams. Items shorter than n tokens cannot be indexed;
their count per benchmark is in ``meta["too_short"]``.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import xxhash

_TOKEN = re.compile(r"\w+|[^\w\s]")
_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multiplier (golden ratio) for the rolling combine
FORMAT_VERSION = 1


@dataclass(frozen=True)
class BenchmarkItem:
    """One benchmark item's text (prompt, solution, tests...) under a stable id."""

    benchmark: str
    item_id: str
    text: str


@dataclass(frozen=True)
class Match:
    """Why a row was removed: which item it overlaps and how much."""

    benchmark: str
    item_id: str
    longest_match_tokens: int
    matched_ngrams: int
    snippet: str  # the longest matched run, normalized tokens joined by spaces (<= 300 chars)

    @property
    def reason(self) -> str:
        return f"decontam_{self.benchmark}"


def tokenize(text: str) -> list[str]:
    """NFKC, lowercase, word/punctuation tokens (whitespace and case never matter)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).lower())


def _mix(h: np.ndarray) -> np.ndarray:
    # splitmix64 finalizer: spreads the polynomial hash so the sorted index has no clumps
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def ngram_hashes(tokens: list[str], n: int) -> np.ndarray:
    """64-bit hashes of the ``len(tokens) - n + 1`` token n-grams, in order (uint64)."""
    if len(tokens) < n:
        return np.empty(0, dtype=np.uint64)
    th = np.fromiter((xxhash.xxh3_64_intdigest(t) for t in tokens), dtype=np.uint64, count=len(tokens))
    m = len(tokens) - n + 1
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):  # wrap-around mod 2^64 is the point
        for j in range(n):
            h = h * _MULT + th[j:j + m]
        return _mix(h)


class BenchmarkIndex:
    """Sorted n-gram hashes of benchmark items, each with the item it came from."""

    def __init__(self, n: int, items: list[tuple[str, str]], item_ngrams: np.ndarray,
                 hashes: np.ndarray, refs: np.ndarray, meta: dict[str, Any]) -> None:
        self.n = n
        self.items = items
        self.item_ngrams = item_ngrams
        self.hashes = hashes
        self.refs = refs
        self.meta = meta

    @classmethod
    def build(cls, items: Iterable[BenchmarkItem], n: int = 13, max_item_df: int = 10,
              sources: dict | None = None) -> "BenchmarkIndex":
        """Index ``items``; entries sharing (benchmark, item_id) are merged into one item.

        ``max_item_df``: n-grams in more distinct items than this are pruned as boilerplate.
        ``sources``: the loader manifest (which benchmarks/files were present), kept in ``meta``.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        keys: dict[tuple[str, str], int] = {}
        per_item: list[list[np.ndarray]] = []
        for it in items:
            k = keys.setdefault((it.benchmark, it.item_id), len(keys))
            if k == len(per_item):
                per_item.append([])
            per_item[k].append(ngram_hashes(tokenize(it.text), n))
        uniq = [np.unique(np.concatenate(hs)) for hs in per_item]
        too_short: dict[str, int] = {}
        for (bench, _), u in zip(keys, uniq):
            if u.size == 0:
                too_short[bench] = too_short.get(bench, 0) + 1
        hashes = np.concatenate(uniq) if uniq else np.empty(0, dtype=np.uint64)
        refs = np.concatenate([np.full(u.size, i, dtype=np.int32) for i, u in enumerate(uniq)]) \
            if uniq else np.empty(0, dtype=np.int32)
        order = np.argsort(hashes, kind="stable")
        hashes, refs = hashes[order], refs[order]
        # per-hash item count (each item contributes a hash once, so run length == item df)
        _, start, counts = np.unique(hashes, return_index=True, return_counts=True)
        common = np.repeat(counts > max_item_df, counts)
        pruned = int((counts > max_item_df).sum())
        hashes, refs = hashes[~common], refs[~common]
        item_ngrams = np.bincount(refs, minlength=len(keys)).astype(np.int32)
        meta = {"format": FORMAT_VERSION, "n": n, "max_item_df": max_item_df, "sources": sources or {},
                "items_per_benchmark": _count_by_benchmark(keys), "too_short": too_short,
                "pruned_common_ngrams": pruned, "indexed_ngrams": int(hashes.size)}
        return cls(n, list(keys), item_ngrams, hashes, refs, meta)

    def to_bytes(self) -> bytes:
        """Serialize as an ``.npz`` (no pickle): arrays plus JSON for items and meta."""
        buf = io.BytesIO()
        header = json.dumps({"n": self.n, "items": self.items, "meta": self.meta}).encode("utf-8")
        np.savez_compressed(buf, header=np.frombuffer(header, dtype=np.uint8), hashes=self.hashes,
                            refs=self.refs, item_ngrams=self.item_ngrams)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "BenchmarkIndex":
        """Inverse of :meth:`to_bytes`."""
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            header = json.loads(z["header"].tobytes().decode("utf-8"))
            if header["meta"].get("format") != FORMAT_VERSION:
                raise ValueError(f"benchmark index format {header['meta'].get('format')} != {FORMAT_VERSION}")
            return cls(header["n"], [tuple(i) for i in header["items"]], z["item_ngrams"], z["hashes"],
                       z["refs"], header["meta"])


def _count_by_benchmark(keys: Iterable[tuple[str, str]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for bench, _ in keys:
        out[bench] = out.get(bench, 0) + 1
    return out


class Decontaminator:
    """Checks texts against a :class:`BenchmarkIndex` with the minimum-match rule above."""

    def __init__(self, index: BenchmarkIndex, min_matches: int = 3) -> None:
        if min_matches < 1:
            raise ValueError(f"min_matches must be >= 1, got {min_matches}")
        self.index = index
        self.min_matches = min_matches

    def check(self, text: str) -> Match | None:
        """The best-matching benchmark item, or None when no item passes the rule."""
        n = self.index.n
        tokens = tokenize(text)
        hs = ngram_hashes(tokens, n)
        if hs.size == 0 or self.index.hashes.size == 0:
            return None
        lo = np.searchsorted(self.index.hashes, hs, side="left")
        hi = np.searchsorted(self.index.hashes, hs, side="right")
        hit_pos = np.nonzero(hi > lo)[0]
        if hit_pos.size == 0:
            return None
        positions: dict[int, list[int]] = {}
        for p in hit_pos.tolist():
            for item in self.index.refs[lo[p]:hi[p]].tolist():
                positions.setdefault(item, []).append(p)
        best: tuple[int, int, int, int] | None = None  # (longest, distinct, item, run_start)
        for item, pos in positions.items():
            distinct = np.unique(hs[pos]).size
            if distinct < min(self.min_matches, int(self.index.item_ngrams[item])):
                continue
            longest, start = _longest_run(pos)
            cand = (longest + n - 1, distinct, -item, start)
            if best is None or cand[:3] > best[:3]:
                best = cand
        if best is None:
            return None
        longest, distinct, neg_item, start = best
        bench, item_id = self.index.items[-neg_item]
        return Match(bench, item_id, longest, distinct, " ".join(tokens[start:start + longest])[:300])

    def __call__(self, text: str) -> str | None:
        """Curation-block form: None to keep, ``"decontam_<benchmark>"`` to drop."""
        m = self.check(text)
        return m.reason if m else None


def _longest_run(sorted_positions: list[int]) -> tuple[int, int]:
    """(length, start) of the longest run of consecutive integers in an ascending list."""
    best_len, best_start, run_len, run_start = 0, 0, 0, 0
    prev = None
    for p in sorted_positions:
        if prev is not None and p == prev + 1:
            run_len += 1
        elif prev is None or p != prev:
            run_len, run_start = 1, p
        if run_len > best_len:
            best_len, best_start = run_len, run_start
        prev = p
    return best_len, best_start
